// The kernel's choice of sweep (sweep_choice.hpp).
#include "sweep_choice.hpp"

#include "../cache_sizes.hpp"

namespace hybridfd {

// The padded entries' default for from_memory (kernel.hpp says why).
bool padded_grid_from_memory(const HaloPlan& plan) {
  return plan.padded_lanes() * std::int64_t{sizeof(double)} > level2_cache_bytes();
}

namespace kernel {
namespace {

// Whether a grid's padded input and its output together outgrow the core's L2: its
// output then cannot stay there.
bool outgrows_level2(const HaloPlan& plan) {
  return (plan.padded_lanes() + plan.grid_lanes()) * std::int64_t{sizeof(double)} > level2_cache_bytes();
}

#if defined(HYBRIDFD_WIDE_VECTOR)
// The columns (a padded grid the wide sweeps serve, its output not streamed as rows):
// where the grid comes from memory, or the padded grid and its output together outgrow
// the L2, the output cannot stay there: with plain stores each of its lines would be
// read (from memory or the L3) before it is written and written back after, so the
// columns stream it instead, where every store is a whole line (Zen 5, in cache: float64
// 1.0-1.25x at 40^3-64^3, 1.25-1.35x at 96^3, complex128 1.15x at 48^3; many grids from
// memory: 1.0-1.25x at 16^3-32^3; `python dev/kernel_ab.py`). Columns prefetch the next
// step's planes from memory and, streamed, float64 in cache too: with the stores gone
// from the L2's traffic its loads wait for them (1.02-1.07x at 40^3-64^3; complex128
// 0.90-0.96x, so it prefetches only from memory).
Sweep columns(const HaloPlan& plan, const Region& region, const double* out, bool from_memory) {
  const std::int64_t lanes = plan.lanes_per_point();
  const Index3& n = plan.extent();
  const std::int64_t out_stride_y = n[2] * lanes, out_stride_x = n[1] * out_stride_y;
  const double* target =
      out + region.begin[0] * out_stride_x + region.begin[1] * out_stride_y + region.begin[2] * lanes;
  const std::int64_t extent[3] = {region.extent[0], region.extent[1], region.extent[2] * lanes};
  const bool streams = (from_memory || outgrows_level2(plan)) &&
                       column_sweep::stores_whole_lines(target, out_stride_x, out_stride_y, extent);
  return {.kind = SweepKind::columns,
          .input_from_memory = from_memory,
          .output_streams = streams,
          .prefetches = from_memory || (streams && lanes == 1),
          .padded = true};
}
#endif

}  // namespace

bool input_is_padded(const HaloPlan& plan, const BoxInput& input) {
  const Index3& n = plan.extent();
  const std::int64_t r = plan.radius(), row_lanes = n[2] * plan.lanes_per_point();
  const Rows& box = input.box;
  auto continues_box = [&](const Rows& ghosts, std::int64_t offset) {
    return ghosts.first == box.first + offset && ghosts.stride_x == box.stride_x && ghosts.stride_y == box.stride_y;
  };
  return continues_box(input.x_ghosts[0], -r * box.stride_x) && continues_box(input.x_ghosts[1], n[0] * box.stride_x) &&
         continues_box(input.y_ghosts[0], -r * box.stride_y) && continues_box(input.y_ghosts[1], n[1] * box.stride_y) &&
         continues_box(input.z_ghosts[0], -r * plan.lanes_per_point()) && continues_box(input.z_ghosts[1], row_lanes);
}

Sweep choose_sweep(const HaloPlan& plan, const BoxInput& input, const Region& region, const double* out,
                   bool from_memory) {
  const bool padded = input_is_padded(plan, input);
  // A grid from memory whose input and output together outgrow the L2 leaves the cache
  // before its output is read again: the row sweeps stream its output (with plain stores
  // each of its lines is first read, and later written back), whole rows only, so that a
  // line a partial row leaves (an overlap schedule's interior) is not streamed in part.
  // Against streaming only grids themselves larger than the L2: 32 x 48^3 float64 from
  // memory 1.39x, 1 x 48^3 1.12x, 32 x 36^3 complex128 1.21x (Zen 5,
  // `python dev/kernel_ab.py`).
  const bool whole_rows = region.begin[2] == 0 && region.extent[2] == plan.extent()[2];
  const bool rows_stream = from_memory && outgrows_level2(plan) && whole_rows;
#if defined(HYBRIDFD_WIDE_VECTOR)
  if (wide_sweeps_beat_row_slide && padded && column_sweep::serves(plan.radius(), plan.lanes_per_point())) {
    // A padded grid within the L2, or any in cache: the columns. A larger one from memory
    // slides its rows, which the core's prefetchers follow better (columns 0.8x at 48^3).
    if (!rows_stream && (!from_memory || !padded_grid_from_memory(plan)))
      return columns(plan, region, out, from_memory);
    // Its output streamed: three planes at a time, the next step's planes prefetched
    // (1.3-1.5x the row slide).
    if (rows_stream)
      return {.kind = SweepKind::three_planes,
              .input_from_memory = from_memory,
              .output_streams = true,
              .prefetches = true,
              .padded = true};
  }
#else
  (void)out;
#endif
  if (padded && !from_memory && region.extent[2] * plan.lanes_per_point() >= row_vector_lanes)
    return {.kind = SweepKind::padded_in_cache,
            .input_from_memory = false,
            .output_streams = false,
            .prefetches = false,
            .padded = true};
  return {.kind = SweepKind::row_slide,
          .input_from_memory = from_memory,
          .output_streams = rows_stream,
          .prefetches = from_memory,
          .padded = padded};
}

}  // namespace kernel
}  // namespace hybridfd
