// overlap: while a batch's halos are in flight, compute each grid's interior (the points
// whose stencil reaches no ghost), then, once they have arrived, the boundary shell
// (Rabenseifner's overlapping of communication and computation, beyond the GPAW papers).
// Every point is computed once by the same kernel, so results are bit-identical to
// computing the whole box at once.
#include "batched.hpp"

namespace hybridfd {
namespace {

class Overlap final : public Schedule {
 public:
  explicit Overlap(const ScheduleContext& context) : buffers_(context, 1) {
    const Index3& n = context.plan->extent();
    const std::int64_t r = context.plan->radius();
    if (n[0] <= 2 * r || n[1] <= 2 * r || n[2] <= 2 * r) {
      shell_[0] = buffers_.whole_box();  // no interior: everything waits for the halos
      shell_regions_ = 1;
      return;
    }
    interior_ = {{r, r, r}, {n[0] - 2 * r, n[1] - 2 * r, n[2] - 2 * r}};
    // The shell as six disjoint slabs: x faces whole, y faces without the x slabs, z faces
    // without the x and y slabs.
    shell_[0] = {{0, 0, 0}, {r, n[1], n[2]}};
    shell_[1] = {{n[0] - r, 0, 0}, {r, n[1], n[2]}};
    shell_[2] = {{r, 0, 0}, {n[0] - 2 * r, r, n[2]}};
    shell_[3] = {{r, n[1] - r, 0}, {n[0] - 2 * r, r, n[2]}};
    shell_[4] = {{r, r, 0}, {n[0] - 2 * r, n[1] - 2 * r, r}};
    shell_[5] = {{r, r, n[2] - r}, {n[0] - 2 * r, n[1] - 2 * r, r}};
    shell_regions_ = 6;
  }

  void apply(const double* in, double* out, std::int64_t grids) override {
    const ScheduleContext& context = buffers_.context();
    Transport& transport = *context.transport;
    detail::for_each_batch(context.batches, grids, [&](std::int64_t first, std::int64_t count) {
      buffers_.copy_in(0, in, first, count);
      const int ticket = transport.start(buffers_.pack(0, count, detail::all_axes));
      if (interior_.points() > 0)
        for (std::int64_t k = 0; k < count; ++k) {
          buffers_.compute(0, out, first, k, interior_);
          if (context.progress > 0 && (k + 1) % context.progress == 0) transport.progress(ticket);
        }
      transport.finish(ticket);
      buffers_.unpack(0, count, detail::all_axes);
      for (std::int64_t k = 0; k < count; ++k)
        for (int region = 0; region < shell_regions_; ++region) buffers_.compute(0, out, first, k, shell_[region]);
    });
  }

 private:
  detail::BatchBuffers buffers_;
  Region interior_;
  std::array<Region, 6> shell_;
  int shell_regions_ = 0;
};

}  // namespace

std::unique_ptr<Schedule> make_overlap_schedule(const ScheduleContext& context) {
  return std::make_unique<Overlap>(context);
}

}  // namespace hybridfd
