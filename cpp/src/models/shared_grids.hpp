// The models whose threads share every grid (master-only and its variants): one schedule,
// one communicating thread 0, and compute steps that the whole team runs, each thread on
// an x-slab of every grid (schedules/batched.hpp). Private to the core.
#pragma once

#include <memory>
#include <optional>

#include "communicators.hpp"
#include "hybridfd/model.hpp"
#include "hybridfd/schedule.hpp"
#include "hybridfd/thread_team.hpp"
#include "hybridfd/transport.hpp"

namespace hybridfd {

// Sends each message in parts, one part per thread, on per-thread communicators
// (masteronly-threaded-comm). Defined in threaded_parts.cpp.
std::unique_ptr<Transport> make_threaded_parts_transport(const ThreadTeam& team,
                                                         const detail::DuplicatedCommunicators& comms,
                                                         std::string_view inner, const TransportLimits& limits);

namespace detail {

struct SharedGridsOptions {
  bool parallel_pack = false;   // all threads pack faces
  bool master_waits = false;    // thread 0 completes the next batch's messages meanwhile
  bool threaded_parts = false;  // all threads send parts of each message
};

class SharedGrids final : public Model {
 public:
  SharedGrids(const ModelContext& context, SharedGridsOptions options)
      : team_(context.threads),
        comms_(context.decomposition->communicator(),
               options.threaded_parts && context.threads > 1 ? context.threads : 0),
        transport_(
            comms_.size() > 0
                ? make_threaded_parts_transport(team_, comms_, context.transport, context.transport_limits())
                : make_transport(context.transport, context.decomposition->communicator(), context.transport_limits())),
        schedule_(make_schedule(
            context.schedule,
            {context.plan, context.stencil, transport_.get(), context.decomposition->rank(), context.batches,
             context.progress,
             TeamWork{&team_, options.parallel_pack, options.master_waits && context.threads > 1, context.master_share},
             context.phase_times, context.tracer, 0, context.halo_work})) {}

  void apply(const double* in, double* out, std::int64_t grids) override { schedule_->apply(in, out, grids); }

 private:
  ThreadTeam team_;
  DuplicatedCommunicators comms_;  // outlives the transport that uses it
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Schedule> schedule_;
};

}  // namespace detail
}  // namespace hybridfd
