// A point's terms in the documented order of stencil.hpp, for one float64 lane or a
// vector of them (any gcc/clang vector type: lane-wise IEEE + and *): the one definition
// every sweep sums with (row_slide.hpp, column_sweep.hpp, streamed_planes.hpp), so their
// results cannot drift apart. Internal linkage, as column_sweep.hpp says why.
#pragma once

#include "hybridfd/stencil.hpp"

namespace hybridfd {
namespace {

// One pair of terms at distance d along an axis, in the documented order: a symmetric
// stencil adds c*(lower + upper) (one multiply fewer, the form Laplacians allow); any
// other adds minus*lower, then plus*upper.
template <bool Symmetric, class T>
inline T add_pair(T sum, T minus, T plus, T lower, T upper) {
  if constexpr (Symmetric) {
    return sum + minus * (lower + upper);
  } else {
    sum += minus * lower;
    return sum + plus * upper;
  }
}

// The coefficients as values of T (double, or a Vector with the coefficient in every
// lane), made once per kernel call: broadcasting inside the loop would cost a load per
// term, and loads, not arithmetic, would then set the pace.
template <int Radius, class T>
struct Coefficients {
  T centre;
  T minus[3][Radius];
  T plus[3][Radius];

  explicit Coefficients(const Stencil& stencil) {
    // Broadcast as x - 0.0, which is x for every x: 0.0 + x would turn a coefficient of
    // -0.0 into +0.0, and that can flip the sign of a zero result.
    centre = stencil.centre - T{};
    for (int axis = 0; axis < 3; ++axis)
      for (int d = 0; d < Radius; ++d)
        minus[axis][d] = stencil.minus[axis][d] - T{}, plus[axis][d] = stencil.plus[axis][d] - T{};
  }
};

}  // namespace
}  // namespace hybridfd
