// Model: who does what inside a rank (docs/design.md; GPAW journal Sect. 6 and Fig. 6.1;
// Rabenseifner and Wellein 2003, Sect. 2 and 5). A model is one file in cpp/src/models/
// plus one line in the registry in model.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hybridfd/batches.hpp"
#include "hybridfd/decomposition.hpp"
#include "hybridfd/halo_plan.hpp"
#include "hybridfd/schedule.hpp"
#include "hybridfd/stencil.hpp"
#include "hybridfd/transport.hpp"

namespace hybridfd {

// What a model builds its threads, transports and schedules from; the pointed-to objects
// outlive the model (the Operator owns them).
struct ModelContext {
  const Decomposition* decomposition = nullptr;
  const HaloPlan* plan = nullptr;
  const Stencil* stencil = nullptr;
  std::string schedule;
  std::string transport;
  BatchShape batches;
  int progress = 0;
  int threads = 1;
  double master_share = 1.0;          // funneled-overlap: thread 0's share of each grid's compute
  PhaseTimes* phase_times = nullptr;  // where compute steps add their times
  Tracer* tracer = nullptr;           // one buffer per thread; records when it is on
  HaloWork* halo_work = nullptr;      // the exchange on its own (schedule.hpp); stencil is null

  // A message per direction of the halo per batch, two batches in flight (double
  // buffering), each message at most the largest face of a full batch.
  TransportLimits transport_limits() const {
    return {static_cast<int>(plan->faces().size()), 2, plan->max_face_lanes() * batches.batch, plan->directions()};
  }
};

class Model {
 public:
  virtual ~Model() = default;
  // Applies the stencil to `grids` unpadded grids laid out one after another in `in`,
  // writing `out` (or, for the exchange on its own, fills the ghosts of `grids` padded
  // grids in `in`; `out` is unused). Collective; nothing is allocated here.
  virtual void apply(const double* in, double* out, std::int64_t grids) = 0;
};

// Collective (models with several threads duplicate the communicator). Throws ValueError
// naming the model and listing the known ones.
std::unique_ptr<Model> make_model(std::string_view name, const ModelContext& context);
std::vector<std::string> model_names();
// What a model does with its threads, declared in its registry line.
struct ModelTraits {
  int thread_level;  // the MPI thread level (MPI_THREAD_*) it needs with more than one thread
  // Which threads compute each grid: "one" (flat's one thread; multiple's threads each
  // their own grids), "all" (the team shares every grid), "all-but-one" (thread 0 mostly
  // communicates, funneled-overlap).
  std::string_view grid_workers;
  // How hybridfd-bench stands in for it in a simulation at scale (docs/simulation.md):
  // "rank-per-core" (flat as it is), "grid-groups" (multiple: a flat rank per core, the
  // grids split into one group per core of a node), "node-cores" (masteronly: a flat
  // rank per node computing at its cores' rate), or "none" (not simulated at scale).
  std::string_view at_scale;
};
// Throws ValueError naming the model and listing the known ones.
ModelTraits model_traits(std::string_view name);
// The MPI thread level (MPI_THREAD_*) the model needs with `threads` threads. Throws
// ValueError naming an unknown model.
int required_thread_level(std::string_view model, int threads);
// "MPI_THREAD_SINGLE" ... "MPI_THREAD_MULTIPLE".
std::string_view thread_level_name(int level);

}  // namespace hybridfd
