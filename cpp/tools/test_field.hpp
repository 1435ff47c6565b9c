// The driver's test problem: a deterministic input field given by a formula of the
// global point, and a checksum of a result that Python computes identically
// (hybridfd.simulate.driver mirrors both). Exact in both languages: the field is an
// integer formula divided once, and the checksum is a weighted sum in a fixed order
// (per rank in C order of its box, then the ranks' partial sums in rank order), with
// separate multiplies and adds (the driver is built with -ffp-contract=off).
#pragma once

#include <cstdint>

namespace hybridfd::tools {

inline constexpr std::int64_t field_modulus = 8191;

// Lane `lane` (0: real part, 1: imaginary part of a complex128 point) of grid g at global
// point (x, y, z). Quadratic in the coordinates, so a Laplacian of it is not zero and a
// halo from the wrong neighbour changes the result.
inline double field_value(std::int64_t g, std::int64_t x, std::int64_t y, std::int64_t z, std::int64_t lane) {
  const std::int64_t h =
      (3 * x * x + 5 * y * y + 7 * z * z + x * y + 2 * y * z + 11 * g * x + 13 * g + 17 * lane + 19 * z) %
      field_modulus;
  return static_cast<double>(h) / static_cast<double>(field_modulus) - 0.5;
}

// The weight of a result lane in the checksum: 1..8, so a permutation of points changes it.
inline double checksum_weight(std::int64_t g, std::int64_t x, std::int64_t y, std::int64_t z, std::int64_t lane) {
  return static_cast<double>(1 + (x + 2 * y + 3 * z + 5 * g + 7 * lane) % 8);
}

}  // namespace hybridfd::tools
