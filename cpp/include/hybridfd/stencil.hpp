// Star stencil of radius r (GPAW journal, Sect. 2.1: the 13-point form is radius 2).
#pragma once

#include <array>
#include <span>
#include <string>
#include <vector>

#include "hybridfd/domain.hpp"

namespace hybridfd {

inline constexpr int max_radius = 6;

// A point's new value is centre*A[p] plus, for axis x, y, z and d = 1..r in that order
// (the order of C1..C13 in Sect. 2.1), the pair of terms at distance d:
//   general stencil:   + minus[axis][d-1]*A[p - d e_axis] + plus[axis][d-1]*A[p + d e_axis]
//   symmetric stencil: + minus[axis][d-1]*(A[p - d e_axis] + A[p + d e_axis])
// summed left to right, each multiply and add rounded on its own (no FMA). A stencil is
// symmetric when minus and plus are the same doubles bit for bit for every axis and
// distance (every Laplacian); pairing then saves one multiply in four. Compared as bits,
// not with ==: with -0.0 on one side and +0.0 on the other the two forms can give a zero
// result different signs, so such a stencil is summed in the general form it states.
// Every kernel and the numpy reference sum in this order, which is what makes all
// approaches bit-identical.
struct Stencil {
  int radius = 1;
  double centre = 0.0;
  std::array<std::array<double, max_radius>, 3> minus{};
  std::array<std::array<double, max_radius>, 3> plus{};

  // Throws ValueError naming the radius unless 1 <= radius <= 6.
  static void check_radius(int radius);

  // Central differences of accuracy order 2r for the Laplacian (the same numbers as
  // GPAW's Laplace with n = r), divided by the squared spacing per axis.
  static Stencil laplace(int radius, std::array<double, 3> spacing);

  // The papers' form: C1 centre, then (-1, +1, -2, +2, ...) per axis x, y, z; the
  // number of coefficients must be 1 + 6r for some r in 1..6 (13 for the 13-point form).
  static Stencil from_coefficients(std::span<const double> coefficients);

  // The inverse of from_coefficients: centre, then per axis (-1, +1, -2, +2, ...).
  std::vector<double> coefficients() const;

  // minus and plus equal bit for bit for every axis and distance: the kernel sums the
  // paired form.
  bool symmetric() const;

  // Every axis's minus and plus equal axis x's bit for bit (a Laplacian on a cubic grid):
  // the kernel then keeps one copy of the coefficients for all three axes.
  bool isotropic() const;

  // "stencil radius r with coefficients (C1, ...)", each coefficient in its shortest
  // exact form: two stencils with the same text are the same stencil.
  std::string description() const;
};

}  // namespace hybridfd
