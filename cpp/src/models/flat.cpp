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
      : transport_(
            make_transport(context.transport, context.decomposition->communicator(), context.transport_limits())),
        schedule_(make_schedule(context.schedule, {.plan = context.plan,
                                                   .stencil = context.stencil,
                                                   .transport = transport_.get(),
                                                   .rank = context.decomposition->rank(),
                                                   .batches = context.batches,
                                                   .progress = context.progress,
                                                   .team = {},
                                                   .phase_times = context.phase_times,
                                                   .tracer = context.tracer,
                                                   .halo_work = context.halo_work})) {}

  void apply(const double* in, double* out, std::int64_t grids) override { schedule_->apply(in, out, grids); }

 private:
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Schedule> schedule_;
};

}  // namespace

std::unique_ptr<Model> make_flat_model(const ModelContext& context) { return std::make_unique<Flat>(context); }

}  // namespace hybridfd
