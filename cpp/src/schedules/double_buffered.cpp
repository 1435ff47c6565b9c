// double-buffered: the exchange of batch k+1 (all dimensions at once) is in flight while
// batch k is computed (GPAW journal, Sect. 5.1.1 and Fig. 5.1). Two message buffer sets
// alternate; with progress on, the next batch's messages are tested between grids.
#include "batched.hpp"

namespace hybridfd {
namespace {

class DoubleBuffered final : public Schedule {
 public:
  explicit DoubleBuffered(const ScheduleContext& context) : buffers_(context, 2) {}

  void apply(const double* in, double* out, std::int64_t grids) override {
    if (grids == 0) return;
    const ScheduleContext& context = buffers_.context();
    auto post = [&](int set, std::int64_t first, std::int64_t count) {
      return buffers_.post(set, in, first, count, detail::every_direction);
    };
    int index = 0, set = 0;
    std::int64_t first = 0;
    std::int64_t count = std::min<std::int64_t>(context.batches.size(0), grids);
    int ticket = post(set, first, count);
    while (true) {
      const std::int64_t next_first = first + count;
      const bool more = next_first < grids;
      std::int64_t next_count = 0;
      int next_ticket = -1;
      if (more) {
        next_count = std::min<std::int64_t>(context.batches.size(index + 1), grids - next_first);
        next_ticket = post(1 - set, next_first, next_count);
      }
      buffers_.wait(ticket);
      buffers_.compute_batch(set, in, out, first, count, next_ticket);
      if (!more) break;
      first = next_first, count = next_count, set = 1 - set, ticket = next_ticket, ++index;
    }
  }

 private:
  detail::BatchBuffers buffers_;
};

}  // namespace

std::unique_ptr<Schedule> make_double_buffered_schedule(const ScheduleContext& context) {
  return std::make_unique<DoubleBuffered>(context);
}

}  // namespace hybridfd
