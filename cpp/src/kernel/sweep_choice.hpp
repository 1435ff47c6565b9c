// How the kernel sweeps a region: the one place that decides it. Two questions settle
// the sweep, and every entry of the kernel asks them here:
//   - does the input come from memory (one of many grids applied in turn) or from cache
//     (a grid applied again and again)? The caller says (`from_memory`); from memory, the
//     kernel prefetches ahead of its sweep and sizes its bands of rows for the core's
//     share of the last-level cache, in cache for its L2;
//   - does the output stream past the caches (non-temporal stores) or not? Where the
//     output cannot stay in the L2 anyway, streaming skips the read of each line before
//     it is written (the write-allocate read) and its later write-back.
// From the answers, the input's layout (one padded array, or rows wherever they live),
// the radius and the point's lanes follows which sweep runs: the row slide
// (row_slide.hpp), its loop nest for padded grids in cache, the columns of wide vectors
// (column_sweep.hpp) or the three-plane sweep (streamed_planes.hpp). The sweeps only
// execute what was chosen.
#pragma once

#include <cstdint>

#include "column_sweep.hpp"
#include "hybridfd/kernel.hpp"

namespace hybridfd::kernel {

enum class SweepKind {
  // Rows slide along z, their neighbour rows found wherever they live (any BoxInput).
  row_slide,
  // A padded grid in cache: one loop nest of the row slide's steps with nothing decided
  // per row (row_slide.hpp, slide_padded_in_cache).
  padded_in_cache,
  // A padded grid: columns of wide vectors swept along y (column_sweep.hpp).
  columns,
  // A padded grid from memory, its output streamed: rows of three planes at a time
  // (streamed_planes.hpp).
  three_planes,
};

struct Sweep {
  SweepKind kind;
  // The input comes from memory (the caller's from_memory): bands of rows sized for the
  // last level's share, not the L2.
  bool input_from_memory;
  // The output is written with streaming stores, fenced before the kernel returns.
  bool output_streams;
  // The sweep prefetches the rows its next step reads first.
  bool prefetches;
  // The input is one padded array: every ghost lies at the box's strides beyond it.
  bool padded;
};

// The row slide's vectors: four float64 lanes (row_slide.hpp).
inline constexpr int row_vector_lanes = 4;

// Whether the wide-vector sweeps beat the row slide on the build's vectors: on 8-lane
// vectors (AVX-512) they do; on 4-lane ones (AVX2, 16 vector registers) neither does, and
// the row slide serves (tests/test_kernel_sweeps.py runs the sweeps on 4 lanes all the
// same). Against the row slide on AVX2 (`python dev/kernel_ab.py`), the columns run
// float64 16^3 1.18x but 32^3 0.80x, complex128 24^3 0.83x and 256 grids of 24^3 applied
// in turn 0.46x; the three planes run 0.19-0.37x the one-plane sweep where the output's
// planes lie at the same offset in their 4 KiB pages (an n^3 float64 grid whose plane is a
// multiple of 4 KiB: 32^3, 96^3, 192^3), whose streamed stores, half a line each and
// interleaved over three planes, contend.
#if defined(HYBRIDFD_WIDE_VECTOR)
inline constexpr bool wide_sweeps_beat_row_slide = wide::lanes == 8;
#else
inline constexpr bool wide_sweeps_beat_row_slide = false;
#endif

// Whether `input` is one padded array (padded_input's layout) for `plan`.
bool input_is_padded(const HaloPlan& plan, const BoxInput& input);

// The sweep of `region` of the box `input` describes into the unpadded grid `out`, for a
// caller who says whether the input comes from memory.
Sweep choose_sweep(const HaloPlan& plan, const BoxInput& input, const Region& region, const double* out,
                   bool from_memory);

// The sweep of one radius (cpp/src/kernel/radius_<r>.cpp each): `sweep` executed on
// `region`, streamed stores left unfenced (apply_stencil fences them).
template <int Radius>
void sweep_radius(const Sweep& sweep, const Stencil& stencil, const HaloPlan& plan, const BoxInput& input,
                  const Region& region, double* out);
template <>
void sweep_radius<1>(const Sweep&, const Stencil&, const HaloPlan&, const BoxInput&, const Region&, double*);
template <>
void sweep_radius<2>(const Sweep&, const Stencil&, const HaloPlan&, const BoxInput&, const Region&, double*);
template <>
void sweep_radius<3>(const Sweep&, const Stencil&, const HaloPlan&, const BoxInput&, const Region&, double*);
template <>
void sweep_radius<4>(const Sweep&, const Stencil&, const HaloPlan&, const BoxInput&, const Region&, double*);
template <>
void sweep_radius<5>(const Sweep&, const Stencil&, const HaloPlan&, const BoxInput&, const Region&, double*);
template <>
void sweep_radius<6>(const Sweep&, const Stencil&, const HaloPlan&, const BoxInput&, const Region&, double*);

}  // namespace hybridfd::kernel
