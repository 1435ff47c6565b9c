// Kernel: the stencil on a region of a padded grid, written to an unpadded output.
#pragma once

#include <array>
#include <optional>

#include "hybridfd/array_ref.hpp"
#include "hybridfd/halo_plan.hpp"
#include "hybridfd/stencil.hpp"

namespace hybridfd {

class ThreadTeam;

// Everything the stencil reads for one box of a HaloPlan, as rows wherever they live: the
// box's own points (usually the user's unpadded grid) and, per axis and side (0: lower),
// the r ghost layers beyond it (a received message, the box's other end for a periodic
// axis in one box, a row of zeros beyond a non-periodic edge, or a padded array's halo).
// Rows point at lane 0 of z = 0. Indexing, per side:
//   box:         row (x, y),        0 <= x < nx, 0 <= y < ny
//   x_ghosts[s]: row (i, y) of ghost plane i (box x = i - r below, nx + i above), 0 <= y < ny
//   y_ghosts[s]: row (x, j) of ghost row j (box y = j - r below, ny + j above), 0 <= x < nx
//   z_ghosts[s]: the r points beyond row (x, y)'s lower/upper end, in z order
// Each face block is in its own coordinates: its extent is w_a (the plan's widths) along
// its axis and the box's along the others. A star stencil reads no edge or corner
// ghosts, so for it nothing else is ever read. A general stencil's edge and corner
// blocks (halo_plan.hpp) are in `edges`, by tag - 6, in their own coordinates the same
// way; those of directions the plan does not exchange are never read.
struct BoxInput {
  Rows box;
  std::array<Rows, 2> x_ghosts;
  std::array<Rows, 2> y_ghosts;
  std::array<Rows, 2> z_ghosts;
  std::array<Rows, halo_directions - 6> edges{};
  // The block of direction tag `tag` (0..25).
  const Rows& block(int tag) const {
    if (tag >= 6) return edges[static_cast<std::size_t>(tag - 6)];
    const auto side = static_cast<std::size_t>(tag % 2);
    return tag < 2 ? x_ghosts[side] : tag < 4 ? y_ghosts[side] : z_ghosts[side];
  }
  Rows& block(int tag) { return const_cast<Rows&>(static_cast<const BoxInput&>(*this).block(tag)); }
};

// The BoxInput of a grid held padded with w_a ghost layers on both sides of each axis
// a, as `plan` describes (every direction of the plan).
BoxInput padded_input(const HaloPlan& plan, const double* padded);

// Applies `stencil` at the points of `region` (box coordinates) of the box `input`
// describes, whose extent and lane count `plan` gives, writing them to the same points
// of the unpadded grid `out`. Each point's terms are summed in the order documented in
// stencil.hpp, with separate multiplies and adds (the build disables floating-point
// contraction), so the result does not depend on the compiler, the region split, where
// the rows live, the sweep or the approach. `from_memory` says whether the input comes
// from memory (one of many grids applied in turn, an apply's usual case) or from cache
// (a grid applied again and again); the kernel sweeps accordingly (cpp/src/kernel/
// sweep_choice.hpp): from memory, it prefetches the rows each step reads first, for the
// core's own prefetchers leave it waiting (1.1-1.2x; in cache the prefetches cost about
// a tenth), and sizes its bands of rows for the core's share of the last-level cache
// instead of its L2, so that each input row comes from memory once (1.05-1.17x). Where
// the output cannot stay in the L2 (from memory, with the grid's input and output
// together larger than the L2; or a padded grid swept in columns whose input and
// output outgrow it), whole rows of it are written with streaming (non-temporal)
// stores, which bypass the caches and skip the write-allocate read (1.1-1.4x from
// memory); streamed stores are fenced before the call returns. Measured with
// `python dev/kernel_ab.py`.
void apply_stencil(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                   double* out, bool from_memory = true);

// The same for a grid held padded with r ghost layers per side, as `plan` describes
// (padded_input), from memory as padded_grid_from_memory says.
void apply_stencil(const Stencil& stencil, const HaloPlan& plan, const double* padded, const Region& region,
                   double* out);

// The padded entries' default for apply_stencil's `from_memory`: a grid larger than the
// core's L2 counts as from memory, a smaller one as in cache. Neither entry can tell
// where a grid really lives, and a wrong guess costs: a grid applied again and again
// that fits one core's share of the L3 runs 1.3-2.1x faster told it is in cache (48^3 to
// 96^3 float64), while many grids applied in turn, told they are in cache, run at
// 0.4-0.55x (docs/performance.md, "The kernel against the memory limit"). Callers who
// know say so (`from_memory`).
bool padded_grid_from_memory(const HaloPlan& plan);

// apply_stencil over the threads of `team`, each thread an x-slab of `region` (whole
// planes, contiguous in memory); a thread whose slab is empty computes nothing. What
// apply_stencil_to_padded runs after its checks, and what kernel_seconds times.
void apply_stencil_in_slabs(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                            double* out, bool from_memory, const ThreadTeam& team);

// Checked entry for one grid already padded with r ghost layers per side: `padded` is
// (nx+2r, ny+2r, nz+2r), `out` is (nx, ny, nz), both C-contiguous float64 or complex128.
// Computes `region` (box coordinates; default the whole box) and leaves the rest of `out`
// untouched, split over `threads` threads by x-slabs of the region. `from_memory` says
// whether the grid comes from memory (one of many grids applied in turn) or from cache
// (a grid applied again and again), as for apply_stencil; by default as
// padded_grid_from_memory says. For benchmarks and for callers with halo code of their
// own. Throws ValueError/TypeError naming the bad value (locally: no MPI involved).
void apply_stencil_to_padded(const Stencil& stencil, const ArrayRef& padded, const ArrayRef& out,
                             const std::optional<Region>& region = std::nullopt, int threads = 1,
                             std::optional<bool> from_memory = std::nullopt);

}  // namespace hybridfd
