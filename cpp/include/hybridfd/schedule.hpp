// Schedule: in which order halo exchange and compute happen across the grids of one
// apply (docs/design.md). A schedule is one file in cpp/src/schedules/ plus one line in
// the registry in schedule.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hybridfd/batches.hpp"
#include "hybridfd/halo_plan.hpp"
#include "hybridfd/stencil.hpp"
#include "hybridfd/thread_team.hpp"
#include "hybridfd/tracer.hpp"
#include "hybridfd/transport.hpp"

namespace hybridfd {

// Where an Operator's applies spent their time, in seconds summed since the last reset:
// the per-phase timers that make the master-only models' synchronisation cost visible.
// Averaged over threads where threads have their own schedules (multiple).
struct PhaseTimes {
  double total = 0;           // wall time of the applies
  double compute_phases = 0;  // wall time of compute steps (the whole team at work)
  double thread_busy = 0;     // of which a thread computed, on average; the rest it idled
                              // waiting for the slowest (load imbalance, fork and join)
  std::int64_t applies = 0;
  // The rest, total - compute_phases: packing and messages, with a master-only team's
  // other threads idle.
  double communication_phases() const { return total - compute_phases; }
  double idle_in_compute() const { return compute_phases - thread_busy; }
};

// The exchange on its own (halo.hpp): what a schedule does with a batch once its ghosts
// are in, in place of the stencil. The grids are held padded (HaloPlan::grids_padded);
// the ghosts are written into them, then `compute(first, last)` is called once for the
// batch's grids, numbered in the caller's array from `base` (empty: nothing is called).
struct HaloWork {
  const double* base = nullptr;
  std::function<void(std::int64_t first, std::int64_t last)> compute;
};

// What a schedule works with; owned by the Operator and valid as long as it is.
struct ScheduleContext {
  const HaloPlan* plan = nullptr;
  const Stencil* stencil = nullptr;
  Transport* transport = nullptr;
  int rank = 0;                       // this rank in the Cartesian communicator
  BatchShape batches;                 // grids per message, and the slope at the start
  int progress = 0;                   // schedules that compute while messages fly test them every
                                      // `progress` grids computed (0: never)
  TeamWork team;                      // the threads that share every grid's compute, if any
  PhaseTimes* phase_times = nullptr;  // where compute steps add their times, if anywhere
  Tracer* tracer = nullptr;           // where the steps are traced, when it is on
  int trace_thread = 0;               // the tracer's thread of this schedule's thread 0 (team
                                      // thread t is trace_thread + t)
  HaloWork* halo_work = nullptr;      // set for the exchange on its own; stencil is then null
};

class Schedule {
 public:
  virtual ~Schedule() = default;
  // Applies the stencil to `grids` unpadded grids laid out one after another in `in`,
  // writing `out`. Buffers were sized at construction; nothing is allocated here.
  virtual void apply(const double* in, double* out, std::int64_t grids) = 0;
};

// What a schedule does with a batch's halo exchange, declared in its registry line: what
// a performance model of it needs (hybridfd.perfmodel) and which settings matter to it.
struct ScheduleTraits {
  int exchanges_per_batch;  // exchanges one after another per batch (serial-dims: x, then y, then z)
  // What the batch's exchange waits behind: "nothing", "previous-batch" (its compute hides
  // the next batch's exchange), "interior" (the batch's own interior), "interior-rows"
  // (the interior's whole rows, behind which only the x and y faces move).
  std::string_view hides_exchange_behind;
  bool takes_slope;  // a slope (smaller first batches) shortens the exchange nothing hides
};
// Throws ValueError naming the schedule and listing the known ones.
ScheduleTraits schedule_traits(std::string_view name);

// Throws ValueError naming the schedule and listing the known ones.
std::unique_ptr<Schedule> make_schedule(std::string_view name, const ScheduleContext& context);
std::vector<std::string> schedule_names();
// Throws ValueError naming the schedule and listing the known ones.
void check_schedule_name(std::string_view name);

}  // namespace hybridfd
