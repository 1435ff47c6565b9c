// Domain: the global grid every rank holds a piece of (GPAW journal, Sect. 2 and 4).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace hybridfd {

// A grid point is a float64 or a complex128. The core works on float64 lanes only:
// a complex128 point is two interleaved float64 lanes, and a real stencil acts on both
// lanes alike, so one kernel and one halo code path serve both dtypes.
enum class ScalarType { float64, complex128 };

std::string_view scalar_type_name(ScalarType type);
// Throws hybridfd::TypeError naming the value for anything but "float64"/"complex128".
ScalarType scalar_type_from_name(std::string_view name);
// Number of float64 lanes per grid point: 1 for float64, 2 for complex128.
inline int lanes_per_point(ScalarType type) { return type == ScalarType::complex128 ? 2 : 1; }

using Index3 = std::array<std::int64_t, 3>;

struct Domain {
  Index3 shape{};                  // (Nx, Ny, Nz), the papers' axis order, C order
  std::array<bool, 3> periodic{};  // per axis; a non-periodic axis has zero ghost values
  ScalarType dtype = ScalarType::float64;

  // Throws hybridfd::ValueError naming the value if an extent is < 1.
  void validate() const;
};

}  // namespace hybridfd
