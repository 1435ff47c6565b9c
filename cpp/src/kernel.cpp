// The stencil kernel (GPAW journal, Sect. 2.1). One instantiation per radius and lane
// count, so the offsets are compile-time multiples of the strides and the z loop (unit
// stride) vectorises. No -ffast-math and no contraction into FMA: each point is summed
// exactly in the order of stencil.hpp.
//
// gcc 12 -O3 -march=native -fopt-info-vec-optimized reports for the z loop, e.g.
//   kernel.cpp:NN:NN: optimized: loop vectorized using 32 byte vectors
// (the report for this build is produced by `make vectorisation-report`).
#include "hybridfd/kernel.hpp"

#include <cstdint>

#include "format.hpp"
#include "hybridfd/errors.hpp"

namespace hybridfd {
namespace {

// One pair of terms at distance d along an axis, in the documented order: a symmetric
// stencil adds c*(lower + upper) (one multiply fewer, the form GPAW's Laplacians allow);
// any other adds minus*lower, then plus*upper.
template <bool Symmetric>
inline double add_pair(double sum, double minus, double plus, double lower, double upper) {
  if constexpr (Symmetric) {
    return sum + minus * (lower + upper);
  } else {
    sum += minus * lower;
    return sum + plus * upper;
  }
}

template <int Radius, int Lanes, bool Symmetric>
void apply_star(const Stencil& stencil, const HaloPlan& plan, const double* padded, const Region& region, double* out) {
  const Index3& n = plan.extent();
  const Index3& p = plan.padded_extent();
  const std::int64_t stride_y = p[2] * Lanes;
  const std::int64_t stride_x = p[1] * stride_y;
  const std::int64_t out_stride_y = n[2] * Lanes;
  const std::int64_t out_stride_x = n[1] * out_stride_y;

  // Local copies: the compiler then knows the coefficients cannot alias the output.
  const double centre = stencil.centre;
  double minus[3][Radius], plus[3][Radius];
  for (int axis = 0; axis < 3; ++axis)
    for (int d = 0; d < Radius; ++d) minus[axis][d] = stencil.minus[axis][d], plus[axis][d] = stencil.plus[axis][d];

  const std::int64_t row_lanes = region.extent[2] * Lanes;
  for (std::int64_t x = region.begin[0]; x < region.begin[0] + region.extent[0]; ++x)
    for (std::int64_t y = region.begin[1]; y < region.begin[1] + region.extent[1]; ++y) {
      const double* __restrict in_row =
          padded + (x + Radius) * stride_x + (y + Radius) * stride_y + (region.begin[2] + Radius) * Lanes;
      double* __restrict out_row = out + x * out_stride_x + y * out_stride_y + region.begin[2] * Lanes;
    // The strides are plain scalars (not an array indexed by axis) so that gcc sees
    // each term as a unit-stride access and vectorises the loop over i. `omp simd`
    // (compiled with -fopenmp-simd: no OpenMP runtime) states that the points are
    // independent; each point's own sum keeps its order.
#pragma omp simd
      for (std::int64_t i = 0; i < row_lanes; ++i) {
        double sum = centre * in_row[i];
#pragma GCC unroll 6
        for (int d = 1; d <= Radius; ++d)
          sum = add_pair<Symmetric>(sum, minus[0][d - 1], plus[0][d - 1], in_row[i - d * stride_x],
                                    in_row[i + d * stride_x]);
#pragma GCC unroll 6
        for (int d = 1; d <= Radius; ++d)
          sum = add_pair<Symmetric>(sum, minus[1][d - 1], plus[1][d - 1], in_row[i - d * stride_y],
                                    in_row[i + d * stride_y]);
#pragma GCC unroll 6
        for (int d = 1; d <= Radius; ++d)
          sum = add_pair<Symmetric>(sum, minus[2][d - 1], plus[2][d - 1], in_row[i - d * Lanes], in_row[i + d * Lanes]);
        out_row[i] = sum;
      }
    }
}

template <int Radius, int Lanes>
void dispatch_symmetry(const Stencil& stencil, const HaloPlan& plan, const double* padded, const Region& region,
                       double* out) {
  if (stencil.symmetric())
    apply_star<Radius, Lanes, true>(stencil, plan, padded, region, out);
  else
    apply_star<Radius, Lanes, false>(stencil, plan, padded, region, out);
}

template <int Lanes>
void dispatch_radius(const Stencil& stencil, const HaloPlan& plan, const double* padded, const Region& region,
                     double* out) {
  switch (stencil.radius) {
    case 1: return dispatch_symmetry<1, Lanes>(stencil, plan, padded, region, out);
    case 2: return dispatch_symmetry<2, Lanes>(stencil, plan, padded, region, out);
    case 3: return dispatch_symmetry<3, Lanes>(stencil, plan, padded, region, out);
    case 4: return dispatch_symmetry<4, Lanes>(stencil, plan, padded, region, out);
    case 5: return dispatch_symmetry<5, Lanes>(stencil, plan, padded, region, out);
    case 6: return dispatch_symmetry<6, Lanes>(stencil, plan, padded, region, out);
    default: Stencil::check_radius(stencil.radius);
  }
}

}  // namespace

void apply_stencil(const Stencil& stencil, const HaloPlan& plan, const double* padded, const Region& region,
                   double* out) {
  if (stencil.radius != plan.radius()) throw ValueError("stencil radius differs from the halo plan's radius");
  if (plan.lanes_per_point() == 2)
    dispatch_radius<2>(stencil, plan, padded, region, out);
  else
    dispatch_radius<1>(stencil, plan, padded, region, out);
}

}  // namespace hybridfd

namespace hybridfd {

void apply_stencil_to_padded(const Stencil& stencil, const ArrayRef& padded, const ArrayRef& out) {
  Stencil::check_radius(stencil.radius);
  const ScalarType type = scalar_type_from_name(padded.dtype);
  if (out.dtype != padded.dtype)
    throw TypeError(detail::concat("output dtype ", out.dtype, " differs from the padded input's ", padded.dtype));
  if (padded.ndim != 3 || out.ndim != 3)
    throw ValueError(
        detail::concat("padded input and output must be 3-D, got ", padded.ndim, "-D and ", out.ndim, "-D"));
  const std::int64_t item = type == ScalarType::complex128 ? 16 : 8;
  Index3 extent{};
  for (int axis = 0; axis < 3; ++axis) {
    extent[axis] = out.shape[axis];
    if (padded.shape[axis] != extent[axis] + 2 * stencil.radius)
      throw ValueError(detail::concat("padded input has shape ", detail::tuple_text(padded.shape, 3), "; output shape ",
                                      detail::tuple_text(out.shape, 3), " with radius ", stencil.radius,
                                      " needs the output's shape plus ", 2 * stencil.radius, " on every axis"));
  }
  for (const ArrayRef* array : {&padded, &out}) {
    const std::array<std::int64_t, 3> expected{array->shape[1] * array->shape[2] * item, array->shape[2] * item, item};
    for (int axis = 0; axis < 3; ++axis)
      if (array->shape[axis] > 1 && array->strides[axis] != expected[axis])
        throw ValueError(detail::concat(array == &out ? "output" : "padded input", " is not C-contiguous: strides ",
                                        detail::tuple_text(array->strides, 3), " bytes"));
  }
  if (!out.writable) throw ValueError("output array is read-only");
  const HaloPlan plan(extent, stencil.radius, lanes_per_point(type));
  const auto* padded_begin = static_cast<const char*>(padded.data);
  const auto* out_begin = static_cast<const char*>(out.data);
  if (padded_begin < out_begin + plan.grid_lanes() * 8 && out_begin < padded_begin + plan.padded_lanes() * 8)
    throw ValueError("output array overlaps the padded input");
  apply_stencil(stencil, plan, static_cast<const double*>(padded.data), Region{{0, 0, 0}, extent},
                static_cast<double*>(const_cast<void*>(out.data)));
}

}  // namespace hybridfd
