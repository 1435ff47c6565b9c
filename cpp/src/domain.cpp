#include "hybridfd/domain.hpp"

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
}

}  // namespace hybridfd
