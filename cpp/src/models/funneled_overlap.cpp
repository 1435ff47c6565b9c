// funneled-overlap: thread 0 completes the exchange of the next batch while threads
// 1..T-1 compute the current one; thread 0 then computes its own share of the batch,
// `master_share` of another thread's (0: a pure communication thread). Rabenseifner and
// Wellein 2003, Sect. 2, 3-A, funneled with fixed reservation. Needs MPI_THREAD_FUNNELED.
#include "shared_grids.hpp"

namespace hybridfd {

std::unique_ptr<Model> make_funneled_overlap_model(const ModelContext& context) {
  return std::make_unique<detail::SharedGrids>(context, detail::SharedGridsOptions{.master_waits = true});
}

}  // namespace hybridfd
