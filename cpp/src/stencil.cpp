#include "hybridfd/stencil.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <utility>

#include "format.hpp"
#include "hybridfd/errors.hpp"

namespace hybridfd {
namespace {

std::int64_t factorial(int n) {
  std::int64_t result = 1;
  for (int i = 2; i <= n; ++i) result *= i;
  return result;
}

}  // namespace

void Stencil::check_radius(int radius) {
  if (radius < 1 || radius > max_radius)
    throw ValueError(detail::concat("stencil radius ", radius, " is out of range; it must be 1..", max_radius));
}

Stencil Stencil::laplace(int radius, std::array<double, 3> spacing) {
  check_radius(radius);
  for (int axis = 0; axis < 3; ++axis)
    if (!(spacing[axis] > 0.0 && std::isfinite(spacing[axis])))
      throw ValueError(detail::concat("grid spacing ", detail::tuple_text(spacing),
                                      " must be positive and finite; it is not on axis ", axis));
  // Central difference of order 2r for d^2/dx^2 at offset d (Chelikowsky et al. 1994,
  // the table GPAW's Laplace uses):
  //   c_d = 2 (-1)^(d+1) (r!)^2 / (d^2 (r-d)! (r+d)!),   c_0 = -2 (c_1 + ... + c_r)
  // Each is formed as one exact integer ratio and divided once, so it is the correctly
  // rounded value of the table's fraction.
  using Wide = __int128;
  Wide centre_numerator = 0, centre_denominator = 1;
  std::array<double, max_radius> unit{};
  for (int d = 1; d <= radius; ++d) {
    const Wide numerator = (d % 2 ? 2 : -2) * factorial(radius) * factorial(radius);
    const Wide denominator = Wide{d} * d * factorial(radius - d) * factorial(radius + d);
    unit[d - 1] = static_cast<double>(numerator) / static_cast<double>(denominator);
    centre_numerator = centre_numerator * denominator - 2 * numerator * centre_denominator;
    centre_denominator *= denominator;
    Wide a = centre_numerator < 0 ? -centre_numerator : centre_numerator, b = centre_denominator;
    while (b != 0) a = std::exchange(b, a % b);
    const Wide divisor = a;
    centre_numerator /= divisor;
    centre_denominator /= divisor;
  }
  Stencil stencil;
  stencil.radius = radius;
  double inverse_square_sum = 0.0;
  for (int axis = 0; axis < 3; ++axis) {
    const double inverse_square = 1.0 / (spacing[axis] * spacing[axis]);
    inverse_square_sum += inverse_square;
    for (int d = 1; d <= radius; ++d)
      stencil.minus[axis][d - 1] = stencil.plus[axis][d - 1] = unit[d - 1] * inverse_square;
  }
  stencil.centre = static_cast<double>(centre_numerator) / static_cast<double>(centre_denominator) * inverse_square_sum;
  return stencil;
}

Stencil Stencil::from_coefficients(std::span<const double> coefficients) {
  const auto count = coefficients.size();
  if (count < 7 || (count - 1) % 6 != 0 || (count - 1) / 6 > max_radius)
    throw ValueError(detail::concat("got ", count,
                                    " stencil coefficients; a star stencil of radius r takes 1 + 6r of them "
                                    "(7, 13, 19, 25, 31 or 37; 13 for the papers' 13-point form)"));
  // A non-finite weight makes every point it touches NaN or infinite: a mistake, not a stencil.
  for (std::size_t i = 0; i < count; ++i)
    if (!std::isfinite(coefficients[i]))
      throw ValueError(detail::concat("stencil coefficient C", i + 1, " is ", coefficients[i], "; it must be finite"));
  Stencil stencil;
  stencil.radius = static_cast<int>((count - 1) / 6);
  stencil.centre = coefficients[0];
  std::size_t next = 1;
  for (int axis = 0; axis < 3; ++axis)
    for (int d = 1; d <= stencil.radius; ++d) {
      stencil.minus[axis][d - 1] = coefficients[next++];
      stencil.plus[axis][d - 1] = coefficients[next++];
    }
  return stencil;
}

namespace {

// Equal as doubles bit for bit: == takes -0.0 for +0.0, which can sum differently.
bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

}  // namespace

bool Stencil::symmetric() const {
  for (int axis = 0; axis < 3; ++axis)
    for (int d = 0; d < radius; ++d)
      if (!same_bits(minus[axis][d], plus[axis][d])) return false;
  return true;
}

bool Stencil::isotropic() const {
  for (int axis = 1; axis < 3; ++axis)
    for (int d = 0; d < radius; ++d)
      if (!same_bits(minus[axis][d], minus[0][d]) || !same_bits(plus[axis][d], plus[0][d])) return false;
  return true;
}

std::vector<double> Stencil::coefficients() const {
  std::vector<double> result{centre};
  for (int axis = 0; axis < 3; ++axis)
    for (int d = 1; d <= radius; ++d) {
      result.push_back(minus[axis][d - 1]);
      result.push_back(plus[axis][d - 1]);
    }
  return result;
}

std::string Stencil::description() const {
  std::string text = detail::concat("stencil radius ", radius, " with coefficients (");
  bool first = true;
  for (const double value : coefficients()) {
    char digits[32];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    text += (first ? "" : ", ") + std::string(digits, end);
    first = false;
  }
  return text + ")";
}

}  // namespace hybridfd
