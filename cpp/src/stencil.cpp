#include "hybridfd/stencil.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
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
  if (!star()) return false;
  for (int axis = 0; axis < 3; ++axis)
    for (int d = 0; d < radius; ++d)
      if (!same_bits(minus[axis][d], plus[axis][d])) return false;
  return true;
}

bool Stencil::isotropic() const {
  if (!star()) return false;
  for (int axis = 1; axis < 3; ++axis)
    for (int d = 0; d < radius; ++d)
      if (!same_bits(minus[axis][d], minus[0][d]) || !same_bits(plus[axis][d], plus[0][d])) return false;
  return true;
}

std::vector<double> Stencil::coefficients() const {
  if (!star())
    throw ValueError(detail::concat("a general ", description(),
                                    " has no star coefficients (C1, ...); its offsets give its weights"));
  std::vector<double> result{centre};
  for (int axis = 0; axis < 3; ++axis)
    for (int d = 1; d <= radius; ++d) {
      result.push_back(minus[axis][d - 1]);
      result.push_back(plus[axis][d - 1]);
    }
  return result;
}

namespace {

std::string shortest(double value) {
  char digits[32];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  return std::string(digits, end);
}

std::string offset_text(const Offset& offset) {
  return detail::concat("(", offset[0], ", ", offset[1], ", ", offset[2], ")");
}

// The group key of the documented order: m's first non-zero axis, its magnitude there,
// then m's later components.
std::array<int, 4> group_key(const Offset& m) {
  const int axis = m[0] != 0 ? 0 : m[1] != 0 ? 1 : 2;
  std::array<int, 4> key{axis, std::abs(m[axis]), 0, 0};
  for (int later = axis + 1, slot = 2; later < 3; ++later, ++slot) key[static_cast<std::size_t>(slot)] = m[later];
  return key;
}

Offset opposite(const Offset& offset) { return {-offset[0], -offset[1], -offset[2]}; }

// The member of {offset, -offset} whose first non-zero component is negative.
Offset canonical(const Offset& offset) {
  for (const int component : offset)
    if (component != 0) return component < 0 ? offset : opposite(offset);
  return offset;
}

void check_offsets(std::span<const Offset> offsets, std::span<const double> weights) {
  if (offsets.size() != weights.size())
    throw ValueError(detail::concat("got ", offsets.size(), " offsets and ", weights.size(),
                                    " weights; a stencil takes one weight per offset"));
  std::map<Offset, std::size_t> seen;
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    for (const int component : offsets[i])
      if (std::abs(component) > max_radius)
        throw ValueError(detail::concat("stencil offset ", offset_text(offsets[i]), " reaches beyond ", max_radius,
                                        " points along an axis; |dx|, |dy|, |dz| must be at most ", max_radius));
    if (!std::isfinite(weights[i]))
      throw ValueError(detail::concat("the weight of stencil offset ", offset_text(offsets[i]), " is ", weights[i],
                                      "; it must be finite"));
    if (const auto [at, fresh] = seen.emplace(offsets[i], i); !fresh)
      throw ValueError(detail::concat("stencil offset ", offset_text(offsets[i]), " is given twice (entries ",
                                      at->second, " and ", i, ")"));
  }
  if (seen.size() == 0 || (seen.size() == 1 && seen.begin()->first == Offset{0, 0, 0}))
    throw ValueError("a stencil needs at least one offset other than the centre (0, 0, 0)");
}

}  // namespace

Stencil Stencil::from_offsets(std::span<const Offset> offsets, std::span<const double> weights) {
  check_offsets(offsets, weights);
  std::map<Offset, double> weight;
  for (std::size_t i = 0; i < offsets.size(); ++i) weight[offsets[i]] = weights[i];
  const bool along_axes = std::all_of(offsets.begin(), offsets.end(), [](const Offset& offset) {
    return (offset[0] != 0) + (offset[1] != 0) + (offset[2] != 0) <= 1;
  });
  Stencil stencil;
  stencil.radius = 0;
  for (const Offset& offset : offsets)
    for (const int component : offset) stencil.radius = std::max(stencil.radius, std::abs(component));
  if (along_axes) {
    for (const auto& [offset, value] : weight) {
      int axis = 0;
      while (axis < 3 && offset[axis] == 0) ++axis;
      if (axis == 3)
        stencil.centre = value;
      else
        (offset[axis] < 0 ? stencil.minus : stencil.plus)[axis][std::abs(offset[axis]) - 1] = value;
    }
    return stencil;
  }
  std::map<std::array<int, 4>, Offset> groups;  // key -> m
  for (const auto& [offset, value] : weight)
    if (offset != Offset{0, 0, 0}) groups.emplace(group_key(canonical(offset)), canonical(offset));
  if (const auto centre = weight.find({0, 0, 0}); centre != weight.end())
    stencil.terms.push_back({centre->first, centre->second, false});
  for (const auto& [key, m] : groups) {
    const auto lower = weight.find(m), upper = weight.find(opposite(m));
    if (lower != weight.end() && upper != weight.end() &&
        std::bit_cast<std::uint64_t>(lower->second) == std::bit_cast<std::uint64_t>(upper->second)) {
      stencil.terms.push_back({m, lower->second, true});
      continue;
    }
    if (lower != weight.end()) stencil.terms.push_back({m, lower->second, false});
    if (upper != weight.end()) stencil.terms.push_back({upper->first, upper->second, false});
  }
  return stencil;
}

std::vector<std::pair<Offset, double>> Stencil::offsets() const {
  std::vector<std::pair<Offset, double>> result;
  if (star()) {
    result.push_back({{0, 0, 0}, centre});
    for (int axis = 0; axis < 3; ++axis)
      for (int d = 1; d <= radius; ++d) {
        Offset offset{0, 0, 0};
        offset[axis] = -d;
        result.push_back({offset, minus[axis][d - 1]});
        offset[axis] = d;
        result.push_back({offset, plus[axis][d - 1]});
      }
    return result;
  }
  for (const StencilTerm& term : terms) {
    result.push_back({term.offset, term.weight});
    if (term.paired) result.push_back({opposite(term.offset), term.weight});
  }
  return result;
}

Offset Stencil::widths() const {
  if (star()) return {radius, radius, radius};
  Offset result{0, 0, 0};
  for (const StencilTerm& term : terms)
    for (int axis = 0; axis < 3; ++axis) result[axis] = std::max(result[axis], std::abs(term.offset[axis]));
  return result;
}

bool Stencil::reads_direction(const Offset& direction) const {
  const int moves = (direction[0] != 0) + (direction[1] != 0) + (direction[2] != 0);
  if (star()) return moves == 1;
  auto points_that_way = [&](const Offset& offset) {
    for (int axis = 0; axis < 3; ++axis)
      if (direction[axis] != 0 && (offset[axis] == 0 || (offset[axis] < 0) != (direction[axis] < 0))) return false;
    return true;
  };
  return moves > 0 && std::any_of(terms.begin(), terms.end(), [&](const StencilTerm& term) {
           return points_that_way(term.offset) || (term.paired && points_that_way(opposite(term.offset)));
         });
}

std::string Stencil::description() const {
  std::string text;
  bool first = true;
  if (star()) {
    text = detail::concat("stencil radius ", radius, " with coefficients (");
    for (const double value : coefficients()) text += (first ? "" : ", ") + shortest(value), first = false;
  } else {
    text = "stencil of offsets (";
    for (const auto& [offset, value] : offsets())
      text += (first ? "" : ", ") + offset_text(offset) + ": " + shortest(value), first = false;
  }
  return text + ")";
}

}  // namespace hybridfd
