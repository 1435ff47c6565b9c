// The wide-vector sweeps of cpp/src/kernel/column_sweep.hpp and streamed_planes.hpp,
// called directly (tests/test_kernel_sweeps.py), whichever width the build has. The
// kernel runs a sweep only where it beats the row slide (sweep_choice.hpp,
// wide_sweeps_beat_row_slide: on AVX-512, not on AVX2), so on an AVX2 machine the
// kernel's own tests would never run the 4-lane sweeps, nor wide_vector.hpp's masks;
// this driver runs them on every machine. Compiled with cpp/src on the include path.
#include <cstdint>

#include "kernel/column_sweep.hpp"
#include "kernel/streamed_planes.hpp"

namespace {

using hybridfd::Stencil;

enum Sweep : int {
  columns = 0,
  columns_prefetching = 1,
  streamed_planes = 2,
  columns_streamed = 3,
  columns_prefetching_streamed = 4
};

#if defined(HYBRIDFD_WIDE_VECTOR)
template <int Radius, int PointLanes, bool Symmetric>
int sweep(int kind, const Stencil& stencil, const double* centre, std::int64_t stride_x, std::int64_t stride_y,
          const std::int64_t (&extent)[3], double* out, std::int64_t out_stride_x, std::int64_t out_stride_y,
          std::int64_t budget_bytes) {
  namespace hf = hybridfd;
  if constexpr (!hf::column_sweep::serves(Radius, PointLanes)) {
    return 1;
  } else {
    // The streamed kinds stream where the columns may (as the kernel's choice of sweep
    // asks): where every store is a whole line.
    const bool stream = (kind == columns_streamed || kind == columns_prefetching_streamed) &&
                        hf::column_sweep::stores_whole_lines(out, out_stride_x, out_stride_y, extent);
    const bool prefetch = kind == columns_prefetching || kind == columns_prefetching_streamed;
    auto columns_with = [&]<bool Prefetch, bool Stream>() {
      hf::column_sweep::sweep<Radius, PointLanes, Symmetric, Prefetch, Stream>(stencil, centre, stride_x, stride_y,
                                                                               extent, out, out_stride_x, out_stride_y);
    };
    if (kind == streamed_planes)
      hf::streamed_planes::sweep<Radius, PointLanes, Symmetric>(stencil, centre, stride_x, stride_y, extent, out,
                                                                out_stride_x, out_stride_y, budget_bytes);
    else if (stream)
      prefetch ? columns_with.template operator()<true, true>() : columns_with.template operator()<false, true>();
    else
      prefetch ? columns_with.template operator()<true, false>() : columns_with.template operator()<false, false>();
    _mm_sfence();  // the streamed stores, as the kernel fences them
    return 0;
  }
}

template <int Radius, bool Symmetric>
int sweep_lanes(int point_lanes, auto&&... arguments) {
  return point_lanes == 1 ? sweep<Radius, 1, Symmetric>(arguments...) : sweep<Radius, 2, Symmetric>(arguments...);
}

template <bool Symmetric>
int sweep_radius(int radius, int point_lanes, auto&&... arguments) {
  switch (radius) {
    case 1: return sweep_lanes<1, Symmetric>(point_lanes, arguments...);
    case 2: return sweep_lanes<2, Symmetric>(point_lanes, arguments...);
    case 3: return sweep_lanes<3, Symmetric>(point_lanes, arguments...);
    default: return 1;
  }
}
#endif

}  // namespace

extern "C" {

// The build's vector width in float64 lanes (0: no wide vectors).
int hybridfd_test_lanes() {
#if defined(HYBRIDFD_WIDE_VECTOR)
  return hybridfd::wide::lanes;
#else
  return 0;
#endif
}

// Whether the columns stream into `out` when asked to (column_sweep::stores_whole_lines).
int hybridfd_test_columns_stream(const double* out, std::int64_t out_stride_x, std::int64_t out_stride_y,
                                 const std::int64_t* extent) {
#if defined(HYBRIDFD_WIDE_VECTOR)
  const std::int64_t box[3] = {extent[0], extent[1], extent[2]};
  return hybridfd::column_sweep::stores_whole_lines(out, out_stride_x, out_stride_y, box) ? 1 : 0;
#else
  (void)out, (void)out_stride_x, (void)out_stride_y, (void)extent;
  return 0;
#endif
}

// Sweeps the region of `extent` points (x, y, z in lanes) of a padded grid whose first
// point is `centre`, with the stencil of `coefficients` (1 + 6r of them, the papers'
// order: Stencil::from_coefficients), into `out`. Strides in float64 lanes. Returns 0,
// or 1 where the build's sweeps do not serve this radius and point width.
int hybridfd_test_sweep(int kind, int radius, int point_lanes, const double* coefficients, const double* centre,
                        std::int64_t stride_x, std::int64_t stride_y, const std::int64_t* extent, double* out,
                        std::int64_t out_stride_x, std::int64_t out_stride_y, std::int64_t budget_bytes) {
#if defined(HYBRIDFD_WIDE_VECTOR)
  Stencil stencil;
  stencil.radius = radius;
  stencil.centre = coefficients[0];
  bool symmetric = true;
  for (int axis = 0; axis < 3; ++axis)
    for (int d = 0; d < radius; ++d) {
      stencil.minus[axis][d] = coefficients[1 + axis * 2 * radius + 2 * d];
      stencil.plus[axis][d] = coefficients[2 + axis * 2 * radius + 2 * d];
      symmetric = symmetric && stencil.minus[axis][d] == stencil.plus[axis][d];
    }
  const std::int64_t box[3] = {extent[0], extent[1], extent[2]};
  auto run = [&]<bool Symmetric>() {
    return sweep_radius<Symmetric>(radius, point_lanes, kind, stencil, centre, stride_x, stride_y, box, out,
                                   out_stride_x, out_stride_y, budget_bytes);
  };
  return symmetric ? run.template operator()<true>() : run.template operator()<false>();
#else
  (void)kind, (void)radius, (void)point_lanes, (void)coefficients, (void)centre, (void)stride_x, (void)stride_y;
  (void)extent, (void)out, (void)out_stride_x, (void)out_stride_y, (void)budget_bytes;
  return 1;
#endif
}
}
