// Stencil: a star stencil of radius r (GPAW journal, Sect. 2.1: the 13-point form is
// radius 2), or a general one, any set of offsets (GPAW's stencils for non-orthogonal
// cells reach along diagonals, so they read edge and corner ghosts).
#pragma once

#include <array>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hybridfd/domain.hpp"

namespace hybridfd {

inline constexpr int max_radius = 6;

using Offset = std::array<int, 3>;

// One term of a general stencil's sum at point p: weight*A[p + offset], or, paired,
// weight*(A[p + offset] + A[p - offset]).
struct StencilTerm {
  Offset offset{};
  double weight = 0.0;
  bool paired = false;
};

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
//
// A general stencil (any offset moving along two or more axes) is a list of terms, summed
// left to right from the first term's value (not from zero: 0 + -0.0 is +0.0), each
// multiply and add rounded on its own. from_offsets fixes the order: the centre, then the
// offsets grouped with their opposites, each group keyed by its member m whose first
// non-zero component is negative, groups in order of (the axis of that component, its
// magnitude, m's later components). A group whose two weights are the same bits is one
// paired term at m; otherwise its members follow one another, m first. For offsets along
// one axis this is the star order above, which is why a set of offsets along the axes is
// made a star stencil (absent offsets weigh +0.0): it keeps the star kernels.
struct Stencil {
  int radius = 1;
  double centre = 0.0;
  std::array<std::array<double, max_radius>, 3> minus{};
  std::array<std::array<double, max_radius>, 3> plus{};
  std::vector<StencilTerm> terms;  // a general stencil's sum; empty for a star stencil

  // Throws ValueError naming the radius unless 1 <= radius <= 6.
  static void check_radius(int radius);

  // Central differences of accuracy order 2r for the Laplacian (the same numbers as
  // GPAW's Laplace with n = r), divided by the squared spacing per axis.
  static Stencil laplace(int radius, std::array<double, 3> spacing);

  // The papers' form: C1 centre, then (-1, +1, -2, +2, ...) per axis x, y, z; the
  // number of coefficients must be 1 + 6r for some r in 1..6 (13 for the 13-point form).
  static Stencil from_coefficients(std::span<const double> coefficients);

  // Any set of distinct offsets, |component| <= 6, with finite weights, at least one
  // offset off the centre; the order of summation is fixed as documented above, whatever
  // the order given. Offsets along the axes only make a star stencil. Throws ValueError
  // naming the bad offset or weight.
  static Stencil from_offsets(std::span<const Offset> offsets, std::span<const double> weights);

  bool star() const { return terms.empty(); }

  // The inverse of from_coefficients: centre, then per axis (-1, +1, -2, +2, ...). A
  // star stencil's only; throws ValueError for a general one.
  std::vector<double> coefficients() const;

  // Every offset and its weight, in the order of the sum (a paired term gives both of
  // its offsets, m first).
  std::vector<std::pair<Offset, double>> offsets() const;

  // The ghost layers the stencil reads per axis: r on every axis for a star stencil,
  // the largest |component| along each axis for a general one.
  Offset widths() const;

  // Whether some offset moves along two or more axes: the halo then needs the edge and
  // corner ghosts of the directions such offsets point to.
  bool reads_edges() const { return !terms.empty(); }

  // Whether the stencil reads the ghosts of halo direction `direction` (each component
  // -1, 0 or 1, not all 0): some offset points that way along each axis the direction
  // moves along. A star stencil reads the six faces.
  bool reads_direction(const Offset& direction) const;

  // minus and plus equal bit for bit for every axis and distance: the kernel sums the
  // paired form. False for a general stencil.
  bool symmetric() const;

  // Every axis's minus and plus equal axis x's bit for bit (a Laplacian on a cubic grid):
  // the kernel then keeps one copy of the coefficients for all three axes. False for a
  // general stencil.
  bool isotropic() const;

  // "stencil radius r with coefficients (C1, ...)" or "stencil of offsets ((dx, dy, dz):
  // w, ...)", each number in its shortest exact form: two stencils with the same text are
  // the same stencil.
  std::string description() const;
};

}  // namespace hybridfd
