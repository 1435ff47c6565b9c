// serial-dims: GPAW's original exchange (GPAW journal, Sect. 4.1). For each batch of
// grids: exchange surface points along x and wait, then y, then z, then compute. With
// batch 1 this is the flat-original approach.
#include "batched.hpp"

namespace hybridfd {
namespace {

class SerialDims final : public Schedule {
 public:
  explicit SerialDims(const ScheduleContext& context) : buffers_(context, 1) {}

  void apply(const double* in, double* out, std::int64_t grids) override {
    detail::for_each_batch(buffers_.context().batches, grids, [&](std::int64_t first, std::int64_t count) {
      for (int axis : detail::all_axes) {
        const std::array<int, 1> one_axis{axis};
        buffers_.wait(buffers_.post(0, in, first, count, one_axis));
      }
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
