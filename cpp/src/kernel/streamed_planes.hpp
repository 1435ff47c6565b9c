// The stencil (GPAW journal, Sect. 2.1) on the build's widest vectors (wide_vector.hpp:
// 8 lanes with AVX-512, 4 with AVX2) for a padded grid that comes from memory, its
// output streamed past the caches: the kernel runs it where sweep_choice.cpp chooses the
// three planes.
//
// Rows are swept in z order, three x-planes at a time. At each step (one vector of lanes of
// row y in each of the three planes) the three centre vectors are each other's
// x-neighbours, so the step loads only the 2r x-neighbour rows outside the three planes,
// and each plane is read once from memory and (2r + 3) / 3 - 1 times from the L2, where
// one plane at a time reads it 2r times from the L2 and two planes at a time r times.
// Cache traffic of the neighbour rows, not the bytes or the arithmetic, holds the row
// slide at 50-65 % of STREAM Copy (`python dev/streaming_limit.py`). While a step sweeps
// its rows, the rows the next step reads first (its three new planes) are prefetched
// into the L1 a line at a time, spread evenly over the step; the core's own prefetchers,
// or prefetches in bursts, leave the step waiting. Rows are taken in bands so that the
// planes a step reads and those it prefetches fit half the L2, also for planes too large
// for it (a 192^3 grid's), and long rows in segments for the L1. Measured against the
// row slide (`python dev/kernel_ab.py`, 512-bit vectors): float64 1.3-1.5x (83-107 % of
// Copy), complex128 1.1x (71-86 %), and with rows whole lines apart starting on a line (a
// masked first vector; sweep says when) complex128 88-96 %. On 256-bit vectors (AVX2) it
// loses to the row slide (sweep_choice.hpp).
//
// Every point is summed exactly as the other paths sum it (stencil_terms.hpp's order,
// separate multiplies and adds): the outputs are bit for bit the same.
#pragma once

#include "wide_vector.hpp"

#if defined(HYBRIDFD_WIDE_VECTOR)
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>

#include "../cache_sizes.hpp"
#include "column_sweep.hpp"
#include "hybridfd/stencil.hpp"
#include "stencil_terms.hpp"

// Internal linkage, as column_sweep.hpp says why.
namespace hybridfd {
namespace {
namespace streamed_planes {

using wide::lanes;
using wide::Vector;

// Three planes a step: two run at 84-89 % of Copy where three reach 91-100 % (32 x 96^3
// float64), four at 86-94 %, six and eight lower still: more planes leave the L1 too
// little room for the rows a step reads and prefetches (`python dev/streaming_limit.py`).
constexpr int planes_per_step = 3;

// Stores the first `count` lanes of `value` past the caches, in the widest pieces the
// address allows (a row whose length is not a multiple of the vector ends in a piece of
// a vector, and starts the next row's vectors off the line), down to single lanes by
// `movnti`: a plain store into a line the streamed stores are filling costs a read of
// the line from memory and, measured, halves the sweep's rate on 100^3 float64.
[[gnu::noinline]] inline void stream_lanes(double* target, Vector value, int count) {
  alignas(64) double lane[lanes];
  std::memcpy(lane, &value, sizeof value);
  for (int i = 0; i < count;) {
    const auto address = reinterpret_cast<std::uintptr_t>(target + i);
    if (address % 32 == 0 && count - i >= 4) {
      _mm256_stream_pd(target + i, _mm256_loadu_pd(lane + i));
      i += 4;
    } else if (address % 16 == 0 && count - i >= 2) {
      _mm_stream_pd(target + i, _mm_loadu_pd(lane + i));
      i += 2;
    } else {
      long long bits;
      std::memcpy(&bits, lane + i, sizeof bits);
      _mm_stream_si64(reinterpret_cast<long long*>(target + i), bits);
      i += 1;
    }
  }
}

// Stores one vector of output past the caches, in the widest pieces its address allows
// (numpy's arrays start 16 bytes past a line), or as stream_lanes can.
[[gnu::always_inline]] inline void stream(double* target, Vector value) {
  const auto address = reinterpret_cast<std::uintptr_t>(target);
  if (address % sizeof(Vector) == 0) return wide::stream_aligned(target, value);
  if (address % 16 != 0) return stream_lanes(target, value, lanes);
  wide::stream_pieces(target, value);
}

// The lines a step prefetches for the next one: `runs` runs of `run_lines` lines, one per
// plane, `plane_bytes` apart, spread evenly over the step's `vectors` vector steps
// (Bresenham's way: no division per vector).
class Prefetches {
 public:
  Prefetches() = default;
  Prefetches(const double* first, std::int64_t run_bytes, std::int64_t runs, std::int64_t plane_bytes,
             std::int64_t vectors)
      : run_start_(reinterpret_cast<std::uintptr_t>(first) / 64 * 64),
        plane_bytes_(plane_bytes),
        run_lines_((reinterpret_cast<std::uintptr_t>(first) % 64 + run_bytes + 63) / 64),
        lines_(runs * run_lines_),
        vectors_(vectors) {}

  // Called once per vector step: issues this step's share of the lines.
  [[gnu::always_inline]] void next() {
    for (credit_ += lines_; credit_ >= vectors_; credit_ -= vectors_) {
      __builtin_prefetch(reinterpret_cast<const void*>(run_start_ + 64 * line_), 0, 3);
      if (++line_ == run_lines_) line_ = 0, run_start_ += plane_bytes_;
    }
  }

 private:
  std::uintptr_t run_start_ = 0;
  std::int64_t plane_bytes_ = 0, run_lines_ = 0, lines_ = 0, vectors_ = 1, credit_ = 0, line_ = 0;
};

// Which lanes of a vector's loads and store are live, for the vector at lane k of a row
// whose region ends at lane `end`: the output's lanes (k .. end - 1), and those of the
// vector beside it (k + lanes ..) that hold z-neighbours (up to end + reach - 1).
struct TailMasks {
  wide::Mask output, after;
};

using wide::first_lanes;

// Lanes k .. k + lanes - 1 of row y of `Planes` consecutive planes (`at`: lane k of the first
// plane's row; `target`: the same point of the output). here[p] holds the centre vector
// of plane p, below[p] the vector before it; both move on by one vector. Masked (the last
// vectors of a row), every load and the store take the lanes `masks` give.
template <int Radius, int PointLanes, bool Symmetric, int Planes, bool Masked>
[[gnu::always_inline]] inline void step(const Coefficients<Radius, Vector>& c, const double* at, std::int64_t stride_x,
                                        std::int64_t stride_y, Vector (&below)[Planes], Vector (&here)[Planes],
                                        double* target, std::int64_t out_stride_x, TailMasks masks) {
  using column_sweep::load;
  Vector along_x[2 * Radius + Planes];  // planes x - r .. x + Planes - 1 + r
#pragma GCC unroll 3
  for (int d = 1; d <= Radius; ++d) {
    along_x[Radius - d] = load<Masked>(at - d * stride_x, masks.output);
    along_x[Radius + Planes - 1 + d] = load<Masked>(at + (Planes - 1 + d) * stride_x, masks.output);
  }
#pragma GCC unroll 3
  for (int p = 0; p < Planes; ++p) along_x[Radius + p] = here[p];
#pragma GCC unroll 3
  for (int p = 0; p < Planes; ++p) {
    const double* own = at + p * stride_x;
    const Vector above = load<Masked>(own + lanes, masks.after);
    Vector y_lower[Radius], y_upper[Radius];
#pragma GCC unroll 3
    for (int d = 1; d <= Radius; ++d) {
      y_lower[d - 1] = load<Masked>(own - d * stride_y, masks.output);
      y_upper[d - 1] = load<Masked>(own + d * stride_y, masks.output);
    }
    const Vector sum =
        column_sweep::point_value<Radius, PointLanes, Symmetric>(c, along_x, p, y_lower, y_upper, below[p], above);
    double* out = target + p * out_stride_x;
    if (Masked && !wide::all_lanes(masks.output))
      stream_lanes(out, sum, wide::count(masks.output));
    else
      stream(out, sum);
    below[p] = here[p];
    here[p] = above;
  }
}

// Rows 0 .. rows - 1 of `Planes` planes from `centre` (lane 0 of row 0 of the first), each
// `end` lanes long, written to `out`, while `prefetches` runs. The first `head` lanes of
// each row (0 .. lanes - 1) are one masked vector of their own, so that every later
// vector's loads start on a vector boundary (sweep says when).
template <int Radius, int PointLanes, bool Symmetric, int Planes>
void sweep_rows(const Coefficients<Radius, Vector>& shared, const double* centre, std::int64_t stride_x,
                std::int64_t stride_y, std::int64_t rows, std::int64_t head, std::int64_t end, double* out,
                std::int64_t out_stride_x, std::int64_t out_stride_y, Prefetches& prefetches) {
  // A local copy stays in registers (column_sweep.hpp's sweep_column says why).
  const Coefficients<Radius, Vector> c = shared;
  constexpr int reach = Radius * PointLanes;
  const wide::Mask before = wide::last_lanes(reach);
  const TailMasks whole{first_lanes(lanes), first_lanes(lanes)};
  for (std::int64_t y = 0; y < rows; ++y) {
    const double* row = centre + y * stride_y;
    double* target = out + y * out_stride_y;
    Vector below[Planes], here[Planes];
    auto start_at = [&](std::int64_t k) {
#pragma GCC unroll 3
      for (int p = 0; p < Planes; ++p) {
        below[p] = wide::load(row + p * stride_x + k - lanes, before);
        here[p] = wide::load(row + p * stride_x + k, first_lanes(end + reach - k));
      }
    };
    start_at(0);
    if (head > 0) {
      prefetches.next();
      step<Radius, PointLanes, Symmetric, Planes, true>(c, row, stride_x, stride_y, below, here, target, out_stride_x,
                                                        {first_lanes(head), first_lanes(head + reach - lanes)});
      start_at(head);
    }
    std::int64_t k = head;
    for (; k + 2 * lanes <= end; k += lanes) {
      prefetches.next();
      step<Radius, PointLanes, Symmetric, Planes, false>(c, row + k, stride_x, stride_y, below, here, target + k,
                                                         out_stride_x, whole);
    }
    for (; k < end; k += lanes) {
      prefetches.next();
      step<Radius, PointLanes, Symmetric, Planes, true>(c, row + k, stride_x, stride_y, below, here, target + k,
                                                        out_stride_x,
                                                        {first_lanes(end - k), first_lanes(end + reach - k - lanes)});
    }
  }
}

// The region of `extent` points (x, y, z; z counted in lanes, PointLanes per point) whose
// first point is `centre` in a padded grid with strides stride_x, stride_y (every point
// the stencil reads lies in the grid), written with streaming stores to `out` (its first
// point, the output's strides); the caller fences them. Bands of rows are sized so that a
// step's 2r + 3 planes and the 3 it prefetches fit `budget_bytes`.
template <int Radius, int PointLanes, bool Symmetric>
void sweep(const Stencil& stencil, const double* centre, std::int64_t stride_x, std::int64_t stride_y,
           const std::int64_t (&extent)[3], double* out, std::int64_t out_stride_x, std::int64_t out_stride_y,
           std::int64_t budget_bytes) {
  const Coefficients<Radius, Vector> c(stencil);
  constexpr int reach = Radius * PointLanes;
  constexpr std::int64_t bytes = sizeof(double);
  const std::int64_t planes_held = 2 * Radius + 2 * planes_per_step;
  const std::int64_t longest =
      std::max<std::int64_t>(Radius, budget_bytes / (planes_held * stride_y * bytes) - 2 * Radius);
  const std::int64_t bands = (extent[1] + longest - 1) / longest;
  const std::int64_t band = (extent[1] + bands - 1) / std::max<std::int64_t>(bands, 1);
  // Long rows are swept in segments, all rows of one before the next, so that the rows
  // a step reads again along y (2r + 1 of each plane, and the 2r x-neighbours) stay in
  // the L1.
  const std::int64_t rows_held = planes_per_step * (2 * Radius + 1) + 2 * Radius;
  const std::int64_t longest_segment =
      std::max<std::int64_t>(lanes, level1_cache_bytes() / (rows_held * bytes) / lanes * lanes);
  const std::int64_t segments = (extent[2] + longest_segment - 1) / longest_segment;
  const std::int64_t segment = (extent[2] / segments + lanes - 1) / lanes * lanes;
  // Where rows are whole vectors apart (padded rows of a multiple of the vector's lanes:
  // on 8-lane vectors, 8 float64 points or 4 complex128 ones, as in 96^3 and 192^3 grids
  // at radius 2), every row and plane starts at the first row's offset in a vector's
  // width, and if that is not 0, the sweep's loads cross lines (every 64-byte load; every
  // other 32-byte one). A first vector of `head` lanes (masked) then brings every later
  // one onto a vector boundary: measured on 8 lanes at numpy's 16-byte offset, complex128
  // 1.14-1.22x, float64 188^3 1.27x (`python dev/kernel_ab.py`). Not where the output would
  // lose the 16-byte alignment its streamed stores need, and not for rows that alternate
  // between two offsets: a head per row there measured 0.97-1.02x (half their loads are
  // on lines either way).
  constexpr std::int64_t vector_bytes = sizeof(Vector);
  const auto offset = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(centre) % vector_bytes);
  const std::int64_t lanes_to_boundary = (vector_bytes - offset) % vector_bytes / bytes;
  const bool rows_on_boundaries = stride_y * bytes % vector_bytes == 0 && offset % bytes == 0;
  const bool output_aligned = reinterpret_cast<std::uintptr_t>(out + lanes_to_boundary) % 16 == 0;
  const std::int64_t head = rows_on_boundaries && output_aligned && extent[2] >= 2 * lanes ? lanes_to_boundary : 0;
  // Segment s covers lanes [segment_begin(s), segment_begin(s + 1)): the first takes the
  // head on top, so every later one starts on a boundary too.
  auto segment_begin = [&](std::int64_t s) { return s == 0 ? 0 : std::min(extent[2], head + s * segment); };
  std::int64_t vectors_per_row = head > 0;
  for (std::int64_t s = 0; segment_begin(s) < extent[2]; ++s)
    vectors_per_row += (segment_begin(s + 1) - segment_begin(s) - (s == 0 ? head : 0) + lanes - 1) / lanes;
  auto planes_at = [&](std::int64_t x) { return std::min<std::int64_t>(planes_per_step, extent[0] - x); };
  // The rows of plane x that a step over rows [y, y + rows) reads, lane -reach of row
  // y - r to lane end + reach of row y + rows - 1 + r, as one run.
  auto run_of = [&](std::int64_t x, std::int64_t y) { return centre + x * stride_x + (y - Radius) * stride_y - reach; };
  auto run_bytes = [&](std::int64_t rows) {
    return ((rows + 2 * Radius - 1) * stride_y + extent[2] + 2 * reach) * bytes;
  };
  for (std::int64_t y = 0; y < extent[1]; y += band) {
    const std::int64_t rows = std::min(band, extent[1] - y);
    for (std::int64_t x = 0; x < extent[0];) {
      const std::int64_t planes = planes_at(x), next = x + planes, vectors = rows * vectors_per_row;
      // The next step's new planes (x' + r .. of the step at x'), or, after a band's last
      // step, every plane the next band's first step reads.
      Prefetches prefetches;
      if (next < extent[0])
        prefetches = Prefetches(run_of(next + Radius, y), run_bytes(rows), planes_at(next), stride_x * bytes, vectors);
      else if (y + rows < extent[1])
        prefetches = Prefetches(run_of(-Radius, y + rows), run_bytes(std::min(band, extent[1] - y - rows)),
                                2 * Radius + planes_at(0), stride_x * bytes, vectors);
      const double* first = centre + x * stride_x + y * stride_y;
      double* target = out + x * out_stride_x + y * out_stride_y;
      auto run = [&]<int Planes>() {
        for (std::int64_t s = 0; segment_begin(s) < extent[2]; ++s) {
          const std::int64_t z = segment_begin(s);
          sweep_rows<Radius, PointLanes, Symmetric, Planes>(c, first + z, stride_x, stride_y, rows, s == 0 ? head : 0,
                                                            segment_begin(s + 1) - z, target + z, out_stride_x,
                                                            out_stride_y, prefetches);
        }
      };
      if (planes == 3)
        run.template operator()<3>();
      else if (planes == 2)
        run.template operator()<2>();
      else
        run.template operator()<1>();
      x = next;
    }
  }
}

}  // namespace streamed_planes
}  // namespace
}  // namespace hybridfd
#endif
