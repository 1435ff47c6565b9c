// The sweeps of one radius, as a kernel::Sweep says: the explicit instantiations of
// radius_<r>.cpp each (one translation unit per radius, so that they compile in
// parallel).
#pragma once

#include <cstdint>

#include "column_sweep.hpp"
#include "row_slide.hpp"
#include "streamed_planes.hpp"
#include "sweep_choice.hpp"

// Internal linkage, as column_sweep.hpp says why.
namespace hybridfd {
namespace {

#if defined(HYBRIDFD_WIDE_VECTOR)
// A wide sweep's region of a padded grid: its first point in the input and in the
// output, the strides of both, and its extent (x, y, z; z counted in lanes).
struct WideRegion {
  const double* first;
  std::int64_t stride_x, stride_y;
  double* target;
  std::int64_t out_stride_x, out_stride_y;
  std::int64_t extent[3];
};

inline WideRegion wide_region(const HaloPlan& plan, const BoxInput& input, const Region& region, double* out) {
  const std::int64_t lanes = plan.lanes_per_point();
  const Index3& n = plan.extent();
  const std::int64_t out_stride_y = n[2] * lanes, out_stride_x = n[1] * out_stride_y;
  const std::int64_t begin = region.begin[2] * lanes;
  return {.first = input.box.at(region.begin[0], region.begin[1]) + begin,
          .stride_x = input.box.stride_x,
          .stride_y = input.box.stride_y,
          .target = out + region.begin[0] * out_stride_x + region.begin[1] * out_stride_y + begin,
          .out_stride_x = out_stride_x,
          .out_stride_y = out_stride_y,
          .extent = {region.extent[0], region.extent[1], region.extent[2] * lanes}};
}

template <int Radius, int Lanes, bool Symmetric>
void sweep_columns(const kernel::Sweep& sweep, const Stencil& stencil, const WideRegion& at) {
  auto run = [&]<bool Prefetch, bool Stream>() {
    column_sweep::sweep<Radius, Lanes, Symmetric, Prefetch, Stream>(
        stencil, at.first, at.stride_x, at.stride_y, at.extent, at.target, at.out_stride_x, at.out_stride_y);
  };
  if (sweep.output_streams)
    sweep.prefetches ? run.template operator()<true, true>() : run.template operator()<false, true>();
  else
    sweep.prefetches ? run.template operator()<true, false>() : run.template operator()<false, false>();
}
#endif

template <int Radius, int Lanes, bool Symmetric>
void sweep_with(const kernel::Sweep& sweep, const Stencil& stencil, const HaloPlan& plan, const BoxInput& input,
                const Region& region, double* out) {
  using kernel::SweepKind;
#if defined(HYBRIDFD_WIDE_VECTOR)
  // choose_sweep picks the wide sweeps only where they serve and beat the row slide.
  if constexpr (kernel::wide_sweeps_beat_row_slide && column_sweep::serves(Radius, Lanes)) {
    if (sweep.kind == SweepKind::columns)
      return sweep_columns<Radius, Lanes, Symmetric>(sweep, stencil, wide_region(plan, input, region, out));
    if (sweep.kind == SweepKind::three_planes) {
      const WideRegion at = wide_region(plan, input, region, out);
      return streamed_planes::sweep<Radius, Lanes, Symmetric>(stencil, at.first, at.stride_x, at.stride_y, at.extent,
                                                              at.target, at.out_stride_x, at.out_stride_y,
                                                              blocking_budget_bytes());
    }
  }
#endif
  if (sweep.kind == SweepKind::padded_in_cache)
    return slide_padded<Radius, Lanes, Symmetric>(stencil, plan, input, region, out);
  if (sweep.output_streams)
    slide_in_bands<Radius, Lanes, Symmetric, true>(sweep, stencil, plan, input, region, out);
  else
    slide_in_bands<Radius, Lanes, Symmetric, false>(sweep, stencil, plan, input, region, out);
}

// kernel::sweep_radius<Radius>: by lanes per point and symmetry, each an instantiation.
template <int Radius>
void sweep_one_radius(const kernel::Sweep& sweep, const Stencil& stencil, const HaloPlan& plan, const BoxInput& input,
                      const Region& region, double* out) {
  const bool symmetric = stencil.symmetric();
  if (plan.lanes_per_point() == 2)
    symmetric ? sweep_with<Radius, 2, true>(sweep, stencil, plan, input, region, out)
              : sweep_with<Radius, 2, false>(sweep, stencil, plan, input, region, out);
  else
    symmetric ? sweep_with<Radius, 1, true>(sweep, stencil, plan, input, region, out)
              : sweep_with<Radius, 1, false>(sweep, stencil, plan, input, region, out);
}

}  // namespace
}  // namespace hybridfd
