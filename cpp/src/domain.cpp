#include "hybridfd/domain.hpp"

#include <limits>
#include <string>

#include "format.hpp"
#include "hybridfd/errors.hpp"

namespace hybridfd {

std::string_view scalar_type_name(ScalarType type) { return type == ScalarType::complex128 ? "complex128" : "float64"; }

ScalarType scalar_type_from_name(std::string_view name) {
  if (name == "float64") return ScalarType::float64;
  if (name == "complex128") return ScalarType::complex128;
  throw TypeError(detail::concat("dtype '", name, "' is not supported; use 'float64' or 'complex128'"));
}

void Domain::validate() const {
  for (int axis = 0; axis < 3; ++axis)
    if (shape[axis] < 1)
      throw ValueError(
          detail::concat("domain shape ", detail::tuple_text(shape), " has a non-positive extent on axis ", axis));
  // Byte offsets into a grid are 64-bit: its points times 16 bytes (complex128) must fit.
  constexpr std::int64_t max_points = std::numeric_limits<std::int64_t>::max() / 16;
  if (shape[0] > max_points / shape[1] / shape[2])
    throw ValueError(detail::concat("domain shape ", detail::tuple_text(shape), " has more than ", max_points,
                                    " points, beyond 64-bit byte offsets"));
}

}  // namespace hybridfd
