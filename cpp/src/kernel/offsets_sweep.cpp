#include "offsets_sweep.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../cache_sizes.hpp"
#include "wide_vector.hpp"

namespace hybridfd::kernel {
namespace {

// Where a padded coordinate c of an axis lies: -1 below the box, 0 in it, 1 above; and
// its coordinate inside that block.
struct AxisPlace {
  int side;
  std::int64_t local;
};
AxisPlace place(std::int64_t c, std::int64_t n, std::int64_t w) {
  if (c < 0) return {-1, c + w};
  if (c >= n) return {1, c - n};
  return {0, c};
}

// Copies `count` lanes (a run of a row, often a z ghost of a few points) without a call
// for the short ones.
inline void copy_lanes(double* to, const double* from, std::int64_t count) {
#if defined(HYBRIDFD_WIDE_VECTOR)
  if (count <= wide::lanes) {
    const wide::Mask mask = wide::first_lanes(count);
    return wide::store(to, mask, wide::load(from, mask));
  }
#endif
  std::memcpy(to, from, static_cast<std::size_t>(count) * sizeof(double));
}

// A run of lanes of a ring row: copied from `from`, or zeros where it is null.
struct Run {
  const double* from;
  std::int64_t count;
};

// One padded plane of the region: rows y in [y0 - wy, y1 + wy), each of the points
// z in [z0 - wz, z1 + wz), copied from the blocks they lie in. Blocks of directions the
// plan does not exchange are never read by the stencil; their points are zeroed.
struct PlaneAssembler {
  const HaloPlan& plan;
  const BoxInput& input;
  const Region& region;
  std::int64_t rows, row_lanes;

  // The runs of ring row `row` of plane x, in z order (below the box, in it, above it),
  // runs that continue one another in the input (a padded grid's) merged into one.
  int runs(std::int64_t x, std::int64_t row, Run (&out)[3]) const {
    const Index3& n = plan.extent();
    const Offset& w = plan.widths();
    const std::int64_t lanes = plan.lanes_per_point();
    const AxisPlace px = place(x, n[0], w[0]);
    const AxisPlace py = place(region.begin[1] - w[1] + row, n[1], w[1]);
    const std::int64_t z_low = region.begin[2] - w[2], z_high = region.begin[2] + region.extent[2] + w[2];
    const std::int64_t cuts[4] = {z_low, std::clamp<std::int64_t>(0, z_low, z_high),
                                  std::clamp<std::int64_t>(n[2], z_low, z_high), z_high};
    int count = 0;
    for (int part = 0; part < 3; ++part) {
      const std::int64_t begin = cuts[part], end = cuts[part + 1];
      if (begin >= end) continue;
      const int sz = part - 1;
      const std::int64_t local_z = sz < 0 ? begin + w[2] : sz > 0 ? begin - n[2] : begin;
      const Rows* rows_of = nullptr;
      if (px.side == 0 && py.side == 0 && sz == 0) {
        rows_of = &input.box;
      } else {
        const int tag = direction_tag({px.side, py.side, sz});
        if (plan.directions() & (DirectionSet{1} << tag)) rows_of = &input.block(tag);
      }
      const double* from = rows_of == nullptr ? nullptr : rows_of->at(px.local, py.local) + local_z * lanes;
      const Run run{from, (end - begin) * lanes};
      if (count > 0 && from != nullptr && out[count - 1].from != nullptr &&
          out[count - 1].from + out[count - 1].count == from)
        out[count - 1].count += run.count;
      else
        out[count++] = run;
    }
    return count;
  }

  // Rows [row_begin, row_end) of plane x.
  void fill_rows(std::int64_t x, double* plane, std::int64_t row_begin, std::int64_t row_end) const {
    for (std::int64_t row = row_begin; row < row_end; ++row) {
      Run parts[3];
      double* to = plane + row * row_lanes;
      for (int part = 0, count = runs(x, row, parts); part < count; to += parts[part++].count)
        if (parts[part].from == nullptr)
          std::memset(to, 0, static_cast<std::size_t>(parts[part].count) * sizeof(double));
        else
          copy_lanes(to, parts[part].from, parts[part].count);
    }
  }
  void fill(std::int64_t x, double* plane) const { fill_rows(x, plane, 0, rows); }

  // Asks for the input of rows [row_begin, row_end) of plane x to be brought into the
  // cache, to be filled from there a step later.
  void prefetch_rows(std::int64_t x, std::int64_t row_begin, std::int64_t row_end) const {
#if defined(HYBRIDFD_WIDE_VECTOR)
    for (std::int64_t row = std::max<std::int64_t>(row_begin, 0); row < std::min(row_end, rows); ++row) {
      Run parts[3];
      for (int part = 0, count = runs(x, row, parts); part < count; ++part) {
        if (parts[part].from == nullptr) continue;
        const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(parts[part].from + parts[part].count);
        for (std::uintptr_t line = reinterpret_cast<std::uintptr_t>(parts[part].from) / 64 * 64; line < end; line += 64)
          _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
      }
    }
#else
    (void)x, (void)row_begin, (void)row_end;
#endif
  }
};

// A term of the sum as offsets into the ring: the plane (dx) and the lanes within it (dy
// rows, dz points) of the term's offset and, paired, of its opposite.
struct RingTerm {
  int plane, partner_plane;
  std::int64_t shift, partner_shift;
  double weight;
  bool paired;
};

#if defined(HYBRIDFD_WIDE_VECTOR)
using wide::lanes;
using wide::Vector;

// A term at one plane x of the sweep: where its rows (and its partner's) start for the
// ring's first row, and its weight in every lane. Set once per plane, so that a row's
// terms cost no index arithmetic.
struct PlaneTerm {
  const double* at;
  const double* partner;
  Vector weight;
  bool paired;
};

// Vectors of output summed at once: each term's weight and row addresses are loaded once
// for all of them, and their sums stay in registers over the terms (per vector and term
// two vector loads and three operations). Two, six and eight ran no faster than four on
// 32 x 96^3 GUCLaplace fcc.
constexpr int block = 4;

// The sums of `count` vectors (1..block) starting `first` lanes into the rows of
// `terms`, in the documented order (stencil.hpp: from the first term's value, each
// multiply and add rounded on its own). Masked: the last vector's lanes past `mask` are
// neither read nor meaningful.
template <int Count, bool Masked>
[[gnu::always_inline]] inline void sum_terms(const PlaneTerm* terms, int count, std::int64_t first, wide::Mask mask,
                                             Vector (&sums)[Count]) {
  const auto load = [&](const double* row, int k) {
    if constexpr (Masked)
      return wide::load(row + first + k * lanes, mask);
    else
      return wide::load(row + first + k * lanes);
  };
  {
    const PlaneTerm& term = terms[0];
    if (term.paired)
      for (int k = 0; k < Count; ++k) sums[k] = term.weight * (load(term.at, k) + load(term.partner, k));
    else
      for (int k = 0; k < Count; ++k) sums[k] = term.weight * load(term.at, k);
  }
  for (int t = 1; t < count; ++t) {
    const PlaneTerm& term = terms[t];
    if (term.paired)
      for (int k = 0; k < Count; ++k) sums[k] = sums[k] + term.weight * (load(term.at, k) + load(term.partner, k));
    else
      for (int k = 0; k < Count; ++k) sums[k] = sums[k] + term.weight * load(term.at, k);
  }
}

// Stores `count` lanes (all of a vector by default) past the caches, in the widest
// pieces the address allows, down to single lanes by `movnti`: a plain store into a line
// the streamed stores are filling would first read the line from memory.
[[gnu::noinline]] void stream_lanes(double* target, Vector value, int count) {
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

template <bool Stream>
[[gnu::always_inline]] inline void put(double* target, Vector value) {
  if constexpr (Stream) {
    const auto address = reinterpret_cast<std::uintptr_t>(target);
    if (address % sizeof(Vector) == 0) return wide::stream_aligned(target, value);
    if (address % 16 == 0) return wide::stream_pieces(target, value);
    return stream_lanes(target, value, lanes);
  } else {
    wide::store(target, value);
  }
}

// One output row of `row_lanes` lanes: blocks of vectors, single vectors, then the
// lanes left, masked.
template <bool Stream>
void sweep_row(const PlaneTerm* terms, int count, std::int64_t row_lanes, double* target) {
  std::int64_t first = 0;
  for (; first + block * lanes <= row_lanes; first += block * lanes) {
    Vector sums[block];
    sum_terms<block, false>(terms, count, first, wide::first_lanes(lanes), sums);
    for (int k = 0; k < block; ++k) put<Stream>(target + first + k * lanes, sums[k]);
  }
  for (; first + lanes <= row_lanes; first += lanes) {
    Vector sums[1];
    sum_terms<1, false>(terms, count, first, wide::first_lanes(lanes), sums);
    put<Stream>(target + first, sums[0]);
  }
  if (first < row_lanes) {
    const wide::Mask mask = wide::first_lanes(row_lanes - first);
    Vector sums[1];
    sum_terms<1, true>(terms, count, first, mask, sums);
    if constexpr (Stream)
      stream_lanes(target + first, sums[0], static_cast<int>(row_lanes - first));
    else
      wide::store(target + first, mask, sums[0]);
  }
}
#endif

#if defined(HYBRIDFD_WIDE_VECTOR)
constexpr bool can_stream = true;
#else
constexpr bool can_stream = false;
#endif

// The ring of padded planes a thread sweeps through: the 2 wx + 1 planes the terms of
// plane x read, and the next plane, filled while plane x is summed (its input's reads
// from memory then overlap the arithmetic). Grown once per thread to the largest it
// meets (no allocation after the first call).
struct Ring {
  double* planes;
  std::int64_t plane_lanes;
  int size;
  double* slot(std::int64_t x) const { return planes + ((x % size + size) % size) * plane_lanes; }
};

// The rows of plane x, summed over the chunks of the row lanes, with the compiler's
// vectors (a build without AVX2).
[[maybe_unused]] void sweep_plane_chunks(const std::vector<RingTerm>& terms, const Ring& ring, std::int64_t x,
                                         std::int64_t rows, std::int64_t ring_row_lanes, std::int64_t row_out,
                                         double* target, std::int64_t out_y) {
  constexpr std::int64_t chunk = 64;
  for (std::int64_t y = 0; y < rows; ++y, target += out_y) {
    const std::int64_t row = y * ring_row_lanes;
    for (std::int64_t first = 0; first < row_out; first += chunk) {
      const std::int64_t count = std::min(chunk, row_out - first);
      double acc[chunk];
      bool started = false;
      for (const RingTerm& term : terms) {
        const double* a = ring.slot(x + term.plane) + row + term.shift + first;
        const double* b = ring.slot(x + term.partner_plane) + row + term.partner_shift + first;
        const double weight = term.weight;
        if (!started) {
          if (term.paired)
            for (std::int64_t i = 0; i < count; ++i) acc[i] = weight * (a[i] + b[i]);
          else
            for (std::int64_t i = 0; i < count; ++i) acc[i] = weight * a[i];
          started = true;
        } else if (term.paired) {
          for (std::int64_t i = 0; i < count; ++i) acc[i] = acc[i] + weight * (a[i] + b[i]);
        } else {
          for (std::int64_t i = 0; i < count; ++i) acc[i] = acc[i] + weight * a[i];
        }
      }
      std::memcpy(target + first, acc, static_cast<std::size_t>(count) * sizeof(double));
    }
  }
}

// Output rows between the rows a plane's assembly copies and those whose input it
// prefetches.
constexpr std::int64_t prefetch_distance = 4;

// The sweep of one region: its geometry, the ring and the terms as offsets into it.
struct OffsetsSweep {
  const PlaneAssembler& assembler;
  const Ring& ring;
  const std::vector<RingTerm>& terms;
  std::int64_t ring_row_lanes, row_out, out_y;
  int wx;
  bool prefetches;

  // Plane x: its rows summed into `target` while plane x + wx + 1 (when `fill_next`) is
  // assembled, a share of its rows after each output row.
  template <bool Stream>
  void plane(std::int64_t x, std::int64_t rows, double* target, bool fill_next) const {
    const std::int64_t next = x + wx + 1;
#if defined(HYBRIDFD_WIDE_VECTOR)
    const std::int64_t ring_rows = assembler.rows;
    thread_local std::vector<PlaneTerm> plane_terms;
    plane_terms.resize(terms.size());
    for (std::size_t t = 0; t < terms.size(); ++t)
      plane_terms[t] = {ring.slot(x + terms[t].plane) + terms[t].shift,
                        ring.slot(x + terms[t].partner_plane) + terms[t].partner_shift, terms[t].weight - Vector{},
                        terms[t].paired};
    const int count = static_cast<int>(terms.size());
    for (std::int64_t y = 0; y < rows; ++y, target += out_y) {
      sweep_row<Stream>(plane_terms.data(), count, row_out, target);
      for (PlaneTerm& term : plane_terms) term.at += ring_row_lanes, term.partner += ring_row_lanes;
      if (fill_next) {
        assembler.fill_rows(next, ring.slot(next), y * ring_rows / rows, (y + 1) * ring_rows / rows);
        if (prefetches)
          assembler.prefetch_rows(next, (y + prefetch_distance) * ring_rows / rows,
                                  (y + prefetch_distance + 1) * ring_rows / rows);
      }
    }
#else
    sweep_plane_chunks(terms, ring, x, rows, ring_row_lanes, row_out, target, out_y);
    if (fill_next) assembler.fill(next, ring.slot(next));
#endif
  }
};

}  // namespace

void sweep_offsets(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                   double* out, bool from_memory) {
  const Index3& n = plan.extent();
  const Offset& w = plan.widths();
  const std::int64_t lanes_per_point = plan.lanes_per_point();
  const std::int64_t rows = region.extent[1] + 2 * w[1];
  // Ring rows a whole number of cache lines apart, each output point's lane z = 0 on a
  // line: the terms that do not move along z then load whole lines, not two halves.
  constexpr std::int64_t line_lanes = 64 / sizeof(double);
  const std::int64_t row_lanes =
      ((region.extent[2] + 2 * w[2]) * lanes_per_point + line_lanes - 1) / line_lanes * line_lanes;
  const std::int64_t lead = (line_lanes - w[2] * lanes_per_point % line_lanes) % line_lanes;
  const std::int64_t plane_lanes = rows * row_lanes;
  const int ring_size = 2 * w[0] + 2;
  thread_local std::vector<double> workspace;
  const auto needed = static_cast<std::size_t>(ring_size * plane_lanes + 2 * line_lanes);
  if (workspace.size() < needed) workspace.resize(needed);
  const auto base = reinterpret_cast<std::uintptr_t>(workspace.data());
  double* planes = workspace.data() + ((64 - base % 64) % 64) / sizeof(double) + lead;
  const Ring ring{planes, plane_lanes, ring_size};
  const PlaneAssembler assembler{plan, input, region, rows, row_lanes};
  thread_local std::vector<RingTerm> terms;  // capacity kept: no allocation after the first call
  terms.clear();
  for (const StencilTerm& term : stencil.terms)
    terms.push_back({term.offset[0], -term.offset[0],
                     (term.offset[1] + w[1]) * row_lanes + (term.offset[2] + w[2]) * lanes_per_point,
                     (-term.offset[1] + w[1]) * row_lanes + (-term.offset[2] + w[2]) * lanes_per_point, term.weight,
                     term.paired});
  const std::int64_t out_y = n[2] * lanes_per_point, out_x = n[1] * out_y;
  const std::int64_t x_begin = region.begin[0], x_end = region.begin[0] + region.extent[0];
  for (std::int64_t x = x_begin - w[0]; x <= x_begin + w[0]; ++x) assembler.fill(x, ring.slot(x));
  // complex128 prefetches the input of the rows it assembles a few output rows ahead:
  // its rows, twice as long, take the core's prefetchers longer to bring (32 x 96^3
  // GUCLaplace fcc: 1.05-1.25x; float64 0.8-1.0x, so it does not).
  const bool prefetches = from_memory && lanes_per_point == 2;
  const OffsetsSweep sweep{assembler, ring, terms,     row_lanes, region.extent[2] * lanes_per_point,
                           out_y,     w[0], prefetches};
  // Where the grid comes from memory and its input and output together outgrow the L2,
  // its output cannot stay in the cache: whole rows are streamed past it, which saves
  // reading each output line before it is written (as the star kernels' row sweeps do,
  // sweep_choice.cpp).
  const bool whole_rows = region.begin[2] == 0 && region.extent[2] == n[2];
  const bool streams = can_stream && from_memory && whole_rows &&
                       (plan.padded_lanes() + plan.grid_lanes()) * std::int64_t{sizeof(double)} > level2_cache_bytes();
  for (std::int64_t x = x_begin; x < x_end; ++x) {
    double* target = out + x * out_x + region.begin[1] * out_y + region.begin[2] * lanes_per_point;
    if (streams)
      sweep.plane<true>(x, region.extent[1], target, x + 1 < x_end);
    else
      sweep.plane<false>(x, region.extent[1], target, x + 1 < x_end);
  }
#if defined(HYBRIDFD_WIDE_VECTOR)
  // Streamed stores are weakly ordered: visible before whoever reads the output is told
  // it is written.
  if (streams) _mm_sfence();
#endif
}

}  // namespace hybridfd::kernel
