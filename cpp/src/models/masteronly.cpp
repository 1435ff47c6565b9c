// masteronly: all threads split every grid's compute; thread 0 alone calls MPI, between
// compute phases, so MPI_THREAD_FUNNELED suffices (GPAW journal Sect. 6, Hybrid
// master-only; Rabenseifner 2a). The team forks and joins once per batch step: the
// per-batch synchronisation the papers blame for this model's losses.
#include "shared_grids.hpp"

namespace hybridfd {

std::unique_ptr<Model> make_masteronly_model(const ModelContext& context) {
  return std::make_unique<detail::SharedGrids>(context, detail::SharedGridsOptions{});
}

}  // namespace hybridfd
