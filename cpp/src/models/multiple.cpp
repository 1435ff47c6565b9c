// multiple: T threads per rank, each owning a contiguous share of the grids (whole grids,
// not pieces of them) and running its own schedule, batching and transport on its own
// duplicated communicator; threads meet only at the end of an apply (GPAW journal
// Sect. 6, Hybrid multiple; Rabenseifner 3-B1). Needs MPI_THREAD_MULTIPLE.
#include <vector>

#include "communicators.hpp"
#include "hybridfd/model.hpp"
#include "hybridfd/schedule.hpp"
#include "hybridfd/thread_team.hpp"
#include "hybridfd/transport.hpp"

namespace hybridfd {
namespace {

class Multiple final : public Model {
 public:
  explicit Multiple(const ModelContext& context)
      : team_(context.threads),
        comms_(context.decomposition->communicator(), context.threads),
        grid_lanes_(context.plan->grid_stride()),
        phase_times_(context.phase_times),
        thread_times_(static_cast<std::size_t>(context.threads)) {
    std::vector<MPI_Comm> comms;
    for (int thread = 0; thread < context.threads; ++thread) comms.push_back(comms_[thread]);
    transports_ = make_thread_transports(context.transport, comms, context.transport_limits());
    for (int thread = 0; thread < context.threads; ++thread) {
      schedules_.push_back(
          make_schedule(context.schedule, {.plan = context.plan,
                                           .stencil = context.stencil,
                                           .transport = transports_[static_cast<std::size_t>(thread)].get(),
                                           .rank = context.decomposition->rank(),
                                           .batches = context.batches,
                                           .progress = context.progress,
                                           .team = {},
                                           .phase_times = &thread_times_[static_cast<std::size_t>(thread)],
                                           .tracer = context.tracer,
                                           .trace_thread = thread,
                                           .halo_work = context.halo_work}));
    }
  }

  void apply(const double* in, double* out, std::int64_t grids) override {
    const std::int64_t threads = team_.size();
    // Every rank splits the same G the same way, so thread t's messages meet thread t's
    // on the neighbour, on the communicator they share.
    auto share = [&](int thread) {
      const std::int64_t first = grids * thread / threads, last = grids * (thread + 1) / threads;
      schedules_[static_cast<std::size_t>(thread)]->apply(in + first * grid_lanes_,
                                                          out ? out + first * grid_lanes_ : nullptr, last - first);
      transports_[static_cast<std::size_t>(thread)]->apply_done();
    };
    team_.run(share);
    // Each thread's compute time, averaged over threads; a thread's idle time is its
    // wait at the end for the slowest thread, seen as total - compute in the averages.
    if (phase_times_)
      for (PhaseTimes& times : thread_times_) {
        phase_times_->compute_phases += times.compute_phases / static_cast<double>(threads);
        phase_times_->thread_busy += times.thread_busy / static_cast<double>(threads);
        times = {};
      }
  }

 private:
  ThreadTeam team_;
  detail::DuplicatedCommunicators comms_;  // outlives the transports that use it
  std::int64_t grid_lanes_;
  PhaseTimes* phase_times_;
  std::vector<PhaseTimes> thread_times_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<std::unique_ptr<Schedule>> schedules_;
};

}  // namespace

std::unique_ptr<Model> make_multiple_model(const ModelContext& context) { return std::make_unique<Multiple>(context); }

}  // namespace hybridfd
