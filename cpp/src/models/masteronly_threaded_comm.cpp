// masteronly-threaded-comm: master-only, but the halo faces are packed by all threads and
// every large message is sent in parts by several threads, so one thread is no longer the
// bandwidth bottleneck (Rabenseifner and Wellein 2003, Sect. 5, "optimization chance").
// Needs MPI_THREAD_MULTIPLE.
#include "shared_grids.hpp"

namespace hybridfd {

std::unique_ptr<Model> make_masteronly_threaded_comm_model(const ModelContext& context) {
  return std::make_unique<detail::SharedGrids>(
      context, detail::SharedGridsOptions{.parallel_pack = true, .threaded_parts = true});
}

}  // namespace hybridfd
