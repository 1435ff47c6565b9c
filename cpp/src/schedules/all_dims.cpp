// all-dims: post the exchanges of all three dimensions at once, wait for all, compute
// (GPAW journal, Sect. 5: use all six torus links at the same time). Valid because a
// star stencil reads no edge or corner ghosts: each face is the box's cross-section and
// reads only interior points, so no exchange depends on another (HaloPlan asserts it).
#include "batched.hpp"

namespace hybridfd {
namespace {

class AllDims final : public Schedule {
 public:
  explicit AllDims(const ScheduleContext& context) : buffers_(context, 1) {}

  void apply(const double* in, double* out, std::int64_t grids) override {
    detail::for_each_batch(buffers_.context().batches, grids, [&](std::int64_t first, std::int64_t count) {
      buffers_.wait(buffers_.post(0, in, first, count, detail::every_direction));
      buffers_.compute_batch(0, in, out, first, count);
    });
  }

 private:
  detail::BatchBuffers buffers_;
};

}  // namespace

std::unique_ptr<Schedule> make_all_dims_schedule(const ScheduleContext& context) {
  return std::make_unique<AllDims>(context);
}

}  // namespace hybridfd
