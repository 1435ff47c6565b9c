// flat: one thread per rank, pure MPI (Rabenseifner's "pure MPI"; the GPAW papers'
// flat-original and flat-optimized approaches).
#include "hybridfd/model.hpp"
#include "hybridfd/schedule.hpp"
#include "hybridfd/transport.hpp"

namespace hybridfd {
namespace {

class Flat final : public Model {
 public:
  explicit Flat(const ModelContext& context)
      // Six messages per batch; double buffering has two batches in flight.
      : transport_(make_transport(context.transport, context.decomposition->communicator(), 6, 2)),
        schedule_(make_schedule(context.schedule, {.plan = context.plan,
                                                   .stencil = context.stencil,
                                                   .transport = transport_.get(),
                                                   .rank = context.decomposition->rank(),
                                                   .batches = context.batches,
                                                   .progress = context.progress,
                                                   .phase_times = context.phase_times})) {}

  void apply(const double* in, double* out, std::int64_t grids) override { schedule_->apply(in, out, grids); }

 private:
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Schedule> schedule_;
};

}  // namespace

std::unique_ptr<Model> make_flat_model(const ModelContext& context) { return std::make_unique<Flat>(context); }

}  // namespace hybridfd
