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

#include "hybridfd/errors.hpp"

namespace hybridfd {
namespace {

template <int Radius, int Lanes>
void apply_star(const Stencil& stencil, const HaloPlan& plan, const double* padded, const Region& region,
                double* out) {
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
  const std::int64_t step[3] = {stride_x, stride_y, Lanes};

  const std::int64_t row_lanes = region.extent[2] * Lanes;
  for (std::int64_t x = region.begin[0]; x < region.begin[0] + region.extent[0]; ++x)
    for (std::int64_t y = region.begin[1]; y < region.begin[1] + region.extent[1]; ++y) {
      const double* __restrict in_row =
          padded + (x + Radius) * stride_x + (y + Radius) * stride_y + (region.begin[2] + Radius) * Lanes;
      double* __restrict out_row = out + x * out_stride_x + y * out_stride_y + region.begin[2] * Lanes;
      for (std::int64_t i = 0; i < row_lanes; ++i) {
        double sum = centre * in_row[i];
#pragma GCC unroll 3
        for (int axis = 0; axis < 3; ++axis)
#pragma GCC unroll 6
          for (int d = 1; d <= Radius; ++d) {
            sum += minus[axis][d - 1] * in_row[i - d * step[axis]];
            sum += plus[axis][d - 1] * in_row[i + d * step[axis]];
          }
        out_row[i] = sum;
      }
    }
}

template <int Lanes>
void dispatch_radius(const Stencil& stencil, const HaloPlan& plan, const double* padded, const Region& region,
                     double* out) {
  switch (stencil.radius) {
    case 1: return apply_star<1, Lanes>(stencil, plan, padded, region, out);
    case 2: return apply_star<2, Lanes>(stencil, plan, padded, region, out);
    case 3: return apply_star<3, Lanes>(stencil, plan, padded, region, out);
    case 4: return apply_star<4, Lanes>(stencil, plan, padded, region, out);
    case 5: return apply_star<5, Lanes>(stencil, plan, padded, region, out);
    case 6: return apply_star<6, Lanes>(stencil, plan, padded, region, out);
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
