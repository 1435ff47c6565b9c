// overlap: while a batch's halos are in flight, compute each grid's interior (the points
// whose stencil reaches no ghost from another rank), then, once they have arrived, the
// boundary shell
// (Rabenseifner's overlapping of communication and computation, beyond the GPAW papers).
// Every point is computed once by the same kernel, so results are bit-identical to
// computing the whole box at once.
//
// overlap-xy: the same, but the z faces are waited for before the interior, which then
// spans z whole. z is the axis along which a grid's rows run: an interior cut in z is
// every row cut short, and its z shell is r points at each end of every row, a cache
// line apart from the next; from memory that shell cost more than the whole interior and
// the cut rows could not be streamed (docs/design.md, "Overlap and the row axis").
// Waiting for z first gives up hiding a third of the exchange to keep whole rows.
#include "batched.hpp"

namespace hybridfd {
namespace {

class Overlap final : public Schedule {
 public:
  Overlap(const ScheduleContext& context, bool rows_whole) : buffers_(context, 1) {
    const HaloPlan& plan = *context.plan;
    const Index3& n = plan.extent();
    const Offset& w = plan.widths();
    // An axis along which some block's ghosts come from another rank is "remote"; the
    // ghosts of the others (a neighbour that is this rank itself, or none) are there from
    // the start (the grid's other end, or zeros), so the interior may span those axes
    // whole: long rows, few shell slabs.
    bool remote[3] = {false, false, false};
    for (const Face& face : plan.faces())
      for (int axis = 0; axis < 3; ++axis)
        remote[axis] = remote[axis] ||
                       (face.direction[axis] != 0 && face.neighbour != MPI_PROC_NULL && face.neighbour != context.rank);
    // The axes whose faces the interior waits for: with rows_whole, a remote z.
    z_first_ = rows_whole && remote[2];
    const bool cut[3] = {remote[0], remote[1], remote[2] && !z_first_};
    Region core = buffers_.whole_box()[0];
    for (int axis = 0; axis < 3; ++axis)
      if (cut[axis]) core.begin[axis] = w[axis], core.extent[axis] = n[axis] - 2 * w[axis];
    if (core.extent[0] <= 0 || core.extent[1] <= 0 || core.extent[2] <= 0) {
      shell_[shell_regions_++] = buffers_.whole_box()[0];  // no interior: all waits for halos
      return;
    }
    interior_ = core;
    // The shell as disjoint slabs: for each cut axis in turn, its two end slabs within
    // what the earlier axes' slabs left over.
    Region rest = buffers_.whole_box()[0];
    for (int axis = 0; axis < 3; ++axis) {
      if (!cut[axis]) continue;
      Region low = rest, high = rest;
      low.extent[axis] = high.extent[axis] = w[axis];
      high.begin[axis] = n[axis] - w[axis];
      shell_[shell_regions_++] = low;
      shell_[shell_regions_++] = high;
      rest.begin[axis] = w[axis], rest.extent[axis] = n[axis] - 2 * w[axis];
    }
  }

  void apply(const double* in, double* out, std::int64_t grids) override {
    const ScheduleContext& context = buffers_.context();
    const std::span<const Region> interior(&interior_, interior_.points() > 0 ? 1 : 0);
    const detail::BatchBuffers::Step shells{.regions = {shell_.data(), shell_regions_}};
    detail::for_each_batch(context.batches, grids, [&](std::int64_t first, std::int64_t count) {
      if (z_first_) {
        // z's messages start first, so that they are the first to arrive.
        const int z_ticket = buffers_.post(0, in, first, count, detail::z_faces);
        const int ticket = buffers_.post(0, in, first, count, detail::every_direction & ~detail::z_faces);
        buffers_.wait(z_ticket);
        buffers_.compute(0, in, out, first, count, {.regions = interior, .arrived = detail::z_faces}, ticket);
        buffers_.wait(ticket);
      } else {
        const int ticket = buffers_.post(0, in, first, count, detail::every_direction);
        buffers_.compute(0, in, out, first, count, {.regions = interior, .arrived = detail::no_direction}, ticket);
        buffers_.wait(ticket);
      }
      buffers_.compute(0, in, out, first, count, shells);
    });
  }

 private:
  detail::BatchBuffers buffers_;
  bool z_first_ = false;
  Region interior_;
  std::array<Region, 6> shell_;
  std::size_t shell_regions_ = 0;
};

}  // namespace

std::unique_ptr<Schedule> make_overlap_schedule(const ScheduleContext& context) {
  return std::make_unique<Overlap>(context, false);
}

std::unique_ptr<Schedule> make_overlap_xy_schedule(const ScheduleContext& context) {
  return std::make_unique<Overlap>(context, true);
}

}  // namespace hybridfd
