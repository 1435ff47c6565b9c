// overlap: while a batch's halos are in flight, compute each grid's interior (the points
// whose stencil reaches no ghost from another rank), then, once they have arrived, the
// boundary shell
// (Rabenseifner's overlapping of communication and computation, beyond the GPAW papers).
// Every point is computed once by the same kernel, so results are bit-identical to
// computing the whole box at once.
#include "batched.hpp"

namespace hybridfd {
namespace {

class Overlap final : public Schedule {
 public:
  explicit Overlap(const ScheduleContext& context) : buffers_(context, 1) {
    const HaloPlan& plan = *context.plan;
    const Index3& n = plan.extent();
    const std::int64_t r = plan.radius();
    // An axis whose ghosts come from another rank is "remote"; the ghosts of the others
    // (a neighbour that is this rank itself, or none) are there from the start (the
    // grid's other end, or zeros), so the interior may span those axes whole: long rows,
    // few shell slabs.
    bool remote[3];
    for (int axis = 0; axis < 3; ++axis) {
      remote[axis] = false;
      for (int side = 0; side < 2; ++side) {
        const int neighbour = plan.faces()[2 * axis + side].neighbour;
        remote[axis] = remote[axis] || (neighbour != MPI_PROC_NULL && neighbour != context.rank);
      }
    }
    Region core = buffers_.whole_box()[0];
    for (int axis = 0; axis < 3; ++axis)
      if (remote[axis]) core.begin[axis] = r, core.extent[axis] = n[axis] - 2 * r;
    if (core.extent[0] <= 0 || core.extent[1] <= 0 || core.extent[2] <= 0) {
      shell_[shell_regions_++] = buffers_.whole_box()[0];  // no interior: all waits for halos
      return;
    }
    interior_ = core;
    // The shell as disjoint slabs: for each remote axis in turn, its two end slabs within
    // what the earlier axes' slabs left over.
    Region rest = buffers_.whole_box()[0];
    for (int axis = 0; axis < 3; ++axis) {
      if (!remote[axis]) continue;
      Region low = rest, high = rest;
      low.extent[axis] = high.extent[axis] = r;
      high.begin[axis] = n[axis] - r;
      shell_[shell_regions_++] = low;
      shell_[shell_regions_++] = high;
      rest.begin[axis] = r, rest.extent[axis] = n[axis] - 2 * r;
    }
  }

  void apply(const double* in, double* out, std::int64_t grids) override {
    const ScheduleContext& context = buffers_.context();
    const std::span<const Region> interior(&interior_, interior_.points() > 0 ? 1 : 0);
    const detail::BatchBuffers::Step interiors{.regions = interior, .remote_ghosts = false};
    const detail::BatchBuffers::Step shells{.regions = {shell_.data(), shell_regions_}, .remote_ghosts = true};
    detail::for_each_batch(context.batches, grids, [&](std::int64_t first, std::int64_t count) {
      const int ticket = buffers_.post(0, in, first, count, detail::all_axes);
      buffers_.compute(0, in, out, first, count, interiors, ticket);
      buffers_.wait(ticket);
      buffers_.compute(0, in, out, first, count, shells);
    });
  }

 private:
  detail::BatchBuffers buffers_;
  Region interior_;
  std::array<Region, 6> shell_;
  std::size_t shell_regions_ = 0;
};

}  // namespace

std::unique_ptr<Schedule> make_overlap_schedule(const ScheduleContext& context) {
  return std::make_unique<Overlap>(context);
}

}  // namespace hybridfd
