// serial-dims: GPAW's original exchange (GPAW journal, Sect. 4.1). For each batch of
// grids: exchange surface points along x and wait, then y, then z, then compute. With
// batch 1 this is the flat-original approach. A general stencil's edge and corner blocks
// travel with the last axis they move along (halo_plan.hpp: they come straight from
// their owners, so no stage waits for another's ghosts).
#include "batched.hpp"

namespace hybridfd {
namespace {

class SerialDims final : public Schedule {
 public:
  explicit SerialDims(const ScheduleContext& context) : buffers_(context, 1) {}

  void apply(const double* in, double* out, std::int64_t grids) override {
    detail::for_each_batch(buffers_.context().batches, grids, [&](std::int64_t first, std::int64_t count) {
      for (const unsigned axis : {0u, 1u, 2u})
        buffers_.wait(buffers_.post(0, in, first, count, directions_ending_on(1u << axis)));
      buffers_.compute_batch(0, in, out, first, count);
    });
  }

 private:
  detail::BatchBuffers buffers_;
};

}  // namespace

std::unique_ptr<Schedule> make_serial_dims_schedule(const ScheduleContext& context) {
  return std::make_unique<SerialDims>(context);
}

}  // namespace hybridfd
