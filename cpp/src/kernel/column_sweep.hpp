// The stencil (GPAW journal, Sect. 2.1) on the build's widest vectors (wide_vector.hpp:
// 8 lanes with AVX-512, 4 with AVX2) for a grid held padded: the kernel runs it where
// sweep_choice.cpp chooses the columns.
//
// Each vector of output is `lanes` consecutive z-lanes of one row (float64 points, or
// complex128 ones at two lanes each). A column of such vectors (fixed lanes k ..) is
// swept along y, two x-planes at a time, and the rows y - r .. y + r of each centre
// plane stay in registers as the sweep moves on: a step loads one new row per plane, the
// 2r x-neighbour rows outside the planes (the planes' own rows are each other's
// x-neighbours) and, per plane, the r points beside the vector at each end, from which
// every z-window is one lane shift (wide::align) of the centre and the vector beside.
// At radius 2 that is 5 loads per output vector where sliding along the rows takes about
// 7, and loads, not arithmetic, set the pace of the row slide on 512-bit vectors
// (`python dev/kernel_ab.py`). A column narrower than a vector (the last one of a row) is
// written with a masked store; every load is masked to the lanes the stencil reads, so
// nothing outside the region's neighbourhood is read.
//
// Every point is summed exactly as the 4-lane kernel sums it (the order of stencil.hpp,
// separate multiplies and adds): the outputs are bit for bit the same.
#pragma once

#include "wide_vector.hpp"

#if defined(HYBRIDFD_WIDE_VECTOR)
#include <algorithm>
#include <cstdint>
#include <utility>

#include "../cache_sizes.hpp"
#include "hybridfd/stencil.hpp"
#include "stencil_terms.hpp"

// Internal linkage (an unnamed namespace): the header is the kernel's alone, and
// dev/kernel_ab.py links two revisions of the kernel into one program, where the linker
// would keep one copy of each weak (template) symbol for both.
namespace hybridfd {
namespace {
namespace column_sweep {

using wide::lanes;
using wide::Vector;

// Whether the sweeps serve radius r with `point_lanes` lanes per point: a point's reach
// along z (r points) must lie in the one vector beside, and the registers hold 2r + 1
// rows per plane, 2r x-neighbours and the 1 + 3r coefficients, which fit AVX-512's 32
// vector registers up to r = 3 (AVX2's 16 spill the coefficients to memory operands).
constexpr bool serves(int radius, int point_lanes) { return radius <= 3 && radius * point_lanes <= lanes; }

// Lanes k + Offset .. of the centre vector (lanes k ..) from the vectors beside it
// (before: lanes k - lanes .., after: lanes k + lanes ..).
template <int Offset>
[[gnu::always_inline]] inline Vector z_window(Vector before, Vector centre, Vector after) {
  if constexpr (Offset > 0)
    return wide::align<Offset>(after, centre);
  else
    return wide::align<lanes + Offset>(centre, before);
}

template <int Radius, int PointLanes, bool Symmetric, int... Distance>
[[gnu::always_inline]] inline Vector add_z_pairs(const Coefficients<Radius, Vector>& c, Vector sum, Vector before,
                                                 Vector centre, Vector after, std::integer_sequence<int, Distance...>) {
  ((sum = add_pair<Symmetric>(sum, c.minus[2][Distance], c.plus[2][Distance],
                              z_window<-(Distance + 1) * PointLanes>(before, centre, after),
                              z_window<(Distance + 1) * PointLanes>(before, centre, after))),
   ...);
  return sum;
}

// The value of the vector of points whose centre is along_x[Radius + Plane] (the x-row
// vectors of planes x - r .. at the same lanes), from its y-neighbour vectors (rows
// y - d and y + d at index d - 1) and the vectors beside it along z (before: lanes
// k - lanes .., after: lanes k + lanes ..), in the documented order: the one sum both
// wide sweeps compute.
template <int Radius, int PointLanes, bool Symmetric, int Count>
[[gnu::always_inline]] inline Vector point_value(const Coefficients<Radius, Vector>& c, const Vector (&along_x)[Count],
                                                 int plane, const Vector (&y_lower)[Radius],
                                                 const Vector (&y_upper)[Radius], Vector before, Vector after) {
  const int centre = Radius + plane;
  Vector sum = c.centre * along_x[centre];
#pragma GCC unroll 3
  for (int d = 1; d <= Radius; ++d)
    sum = add_pair<Symmetric>(sum, c.minus[0][d - 1], c.plus[0][d - 1], along_x[centre - d], along_x[centre + d]);
#pragma GCC unroll 3
  for (int d = 1; d <= Radius; ++d)
    sum = add_pair<Symmetric>(sum, c.minus[1][d - 1], c.plus[1][d - 1], y_lower[d - 1], y_upper[d - 1]);
  return add_z_pairs<Radius, PointLanes, Symmetric>(c, sum, before, along_x[centre], after,
                                                    std::make_integer_sequence<int, Radius>{});
}

// Which lanes of a column's loads and store are live. A whole column loads and stores
// all lanes of its rows; beside the centre only the `reach` lanes next to it (r points)
// are read. The last column of a region whose z-extent is not a multiple of the vector
// has `width` < lanes: its centre rows are read for the width and the reach beyond it
// (z-neighbours of its last lanes), every other row and its output for the width alone.
struct ColumnMasks {
  wide::Mask output, centre, before, after;
  ColumnMasks(int width, int reach)
      : output(wide::first_lanes(width)),
        centre(wide::first_lanes(width + reach)),
        before(wide::last_lanes(reach)),
        after(wide::first_lanes(width + reach - lanes)) {}
};

template <bool Partial>
[[gnu::always_inline]] inline Vector load(const double* source, wide::Mask mask) {
  if constexpr (Partial)
    return wide::load(source, mask);
  else
    return wide::load(source);
}

// The column at `centre` (lane k of row y_begin of the first plane; the planes follow at
// stride_x, rows at stride_y) for rows y_begin .. y_begin + rows - 1, written to `out`
// (the same point of the output, with its own strides). With Prefetch, each row's line in
// the two planes the next two-plane x-step reads first (x + 2 + r, x + 3 + r) is
// prefetched into the L1 (sweep says why).
template <int Radius, int PointLanes, bool Symmetric, int Planes, bool Partial, bool Prefetch, bool Stream>
[[gnu::always_inline]] inline void sweep_column(const Coefficients<Radius, Vector>& shared, const double* centre,
                                                std::int64_t stride_x, std::int64_t stride_y, std::int64_t rows,
                                                double* out, std::int64_t out_stride_x, std::int64_t out_stride_y,
                                                const ColumnMasks masks) {
  // Local copies stay in registers: through the references, the compiler reloads them
  // at every use (it cannot prove the stores to `out` leave them alone), a load per
  // coefficient and vector.
  const Coefficients<Radius, Vector> c = shared;
  constexpr int span = 2 * Radius + 1;
  // window[p][j]: row y - r + j of plane p, the rows a step reads along y.
  Vector window[Planes][span];
  // Of a narrow column, the rows that are never a centre (the r rows beyond each end)
  // are read for the width alone: they are y-neighbours only.
  auto row_mask = [&](std::int64_t y) { return y >= 0 && y < rows ? masks.centre : masks.output; };
#pragma GCC unroll 2
  for (int p = 0; p < Planes; ++p)
#pragma GCC unroll 6
    for (int j = 0; j + 1 < span; ++j)
      window[p][j] = load<Partial>(centre + p * stride_x + (j - Radius) * stride_y, row_mask(j - Radius));
  for (std::int64_t y = 0; y < rows; ++y) {
    const double* row = centre + y * stride_y;
    Vector along_x[2 * Radius + Planes];  // planes x - r .. x + Planes - 1 + r at row y
#pragma GCC unroll 3
    for (int d = 1; d <= Radius; ++d) {
      along_x[Radius - d] = load<Partial>(row - d * stride_x, masks.output);
      along_x[Radius + Planes - 1 + d] = load<Partial>(row + (Planes - 1 + d) * stride_x, masks.output);
    }
    if constexpr (Prefetch) {
      __builtin_prefetch(row + (Planes + Radius) * stride_x, 0, 3);
      __builtin_prefetch(row + (Planes + Radius + 1) * stride_x, 0, 3);
    }
#pragma GCC unroll 2
    for (int p = 0; p < Planes; ++p) {
      window[p][span - 1] = load<Partial>(row + p * stride_x + Radius * stride_y, row_mask(y + Radius));
      along_x[Radius + p] = window[p][Radius];
    }
#pragma GCC unroll 2
    for (int p = 0; p < Planes; ++p) {
      const double* own = row + p * stride_x;
      const Vector before = wide::load(own - lanes, masks.before);
      const Vector after = wide::load(own + lanes, masks.after);
      Vector y_lower[Radius], y_upper[Radius];
#pragma GCC unroll 3
      for (int d = 1; d <= Radius; ++d) {
        y_lower[d - 1] = window[p][Radius - d];
        y_upper[d - 1] = window[p][Radius + d];
      }
      const Vector sum = point_value<Radius, PointLanes, Symmetric>(c, along_x, p, y_lower, y_upper, before, after);
      double* target = out + p * out_stride_x + y * out_stride_y;
      if constexpr (Partial)
        wide::store(target, masks.output, sum);
      else if constexpr (Stream)
        wide::stream_aligned(target, sum);
      else
        wide::store(target, sum);
#pragma GCC unroll 6
      for (int j = 0; j + 1 < span; ++j) window[p][j] = window[p][j + 1];
    }
  }
}

// The region of `extent` points (x, y, z; z counted in lanes, PointLanes per point)
// whose first point is `centre` in a padded grid with strides stride_x, stride_y (every
// point the stencil reads lies in the grid), written to `out` (its first point, the
// output's strides): with plain stores or, with Stream, past the caches (only where
// stores_whole_lines; the caller fences the streamed stores). With Prefetch, each step
// prefetches its successor's new planes.
template <int Radius, int PointLanes, bool Symmetric, bool Prefetch, bool Stream>
void sweep(const Stencil& stencil, const double* centre, std::int64_t stride_x, std::int64_t stride_y,
           const std::int64_t (&extent)[3], double* out, std::int64_t out_stride_x, std::int64_t out_stride_y) {
  constexpr int reach = Radius * PointLanes;
  const Coefficients<Radius, Vector> c(stencil);
  const ColumnMasks whole(lanes, reach);
  const std::int64_t full_end = extent[2] / lanes * lanes;
  const ColumnMasks last(static_cast<int>(extent[2] - full_end), reach);
  // The grid is swept band of rows by band of rows, and within a band every x-step (all
  // its columns) before the next: a step reads 2r + 2 planes, of which the next step reads
  // 2r again. Bands are sized so that those planes' rows (the band and r rows beyond each
  // side, at the grid's own row stride) fit the L1: the next step then finds them there,
  // not in the L2; sweeping every band of one x-step before the next leaves them to the
  // L2 once a plane outgrows the L1 (bands for the L1, float64 in cache: 1.15x at 32^3,
  // 1.28x at 40^3; `python dev/kernel_ab.py`).
  // A band's planes are runs of a few KiB each, which the core's prefetchers follow worse
  // than whole planes: from memory (many grids applied in turn) the bands cost 0.65-0.91x
  // unless each step prefetches its successor's new planes (Prefetch: 1.27-1.54x from
  // memory, 0.81-0.91x in cache, where the prefetches take load slots from the stencil).
  const std::int64_t slab_row_bytes = (2 * Radius + 2) * stride_y * static_cast<std::int64_t>(sizeof(double));
  const std::int64_t longest = std::max<std::int64_t>(Radius, level1_cache_bytes() / slab_row_bytes - 2 * Radius);
  const std::int64_t bands = (extent[1] + longest - 1) / longest;
  const std::int64_t band = (extent[1] + bands - 1) / std::max<std::int64_t>(bands, 1);
  for (std::int64_t y = 0; y < extent[1]; y += band) {
    const std::int64_t rows = std::min(band, extent[1] - y);
    auto planes = [&]<int Planes, bool PrefetchNext>(std::int64_t x) {
      const double* first = centre + x * stride_x + y * stride_y;
      double* target = out + x * out_stride_x + y * out_stride_y;
      for (std::int64_t k = 0; k < full_end; k += lanes)
        sweep_column<Radius, PointLanes, Symmetric, Planes, false, PrefetchNext, Stream>(
            c, first + k, stride_x, stride_y, rows, target + k, out_stride_x, out_stride_y, whole);
      if (full_end < extent[2])
        sweep_column<Radius, PointLanes, Symmetric, Planes, true, PrefetchNext, false>(
            c, first + full_end, stride_x, stride_y, rows, target + full_end, out_stride_x, out_stride_y, last);
    };
    // With Prefetch, every step but the last two-plane one prefetches (when the next step
    // has one plane, it would prefetch a plane beyond the grid).
    std::int64_t x = 0;
    if constexpr (Prefetch)
      for (; x + 4 <= extent[0]; x += 2) planes.template operator()<2, true>(x);
    for (; x + 2 <= extent[0]; x += 2) planes.template operator()<2, false>(x);
    if (x < extent[0]) planes.template operator()<1, false>(x);
  }
}

// Whether every store of a sweep of `extent` into `out` writes one whole 64-byte line
// (8-lane vectors, output rows of whole vectors, each on a line): only then may it
// stream, for a column writes the next vector of its row a whole band of rows later,
// by when a write-combining buffer holding part of a line has long been flushed, at
// the cost of a read of the line from memory; and a streamed vector's store needs its
// line's alignment.
inline bool stores_whole_lines(const double* out, std::int64_t out_stride_x, std::int64_t out_stride_y,
                               const std::int64_t (&extent)[3]) {
  return lanes * sizeof(double) == 64 && reinterpret_cast<std::uintptr_t>(out) % 64 == 0 && out_stride_x % lanes == 0 &&
         out_stride_y % lanes == 0 && extent[2] % lanes == 0;
}

}  // namespace column_sweep
}  // namespace
}  // namespace hybridfd
#endif
