// What changes when hybridfd-bench runs under SimGrid's SMPI (built with -DHYBRIDFD_SMPI=ON,
// docs/simulation.md): grid data in SMPI shared memory, so thousands of simulated ranks
// fit in one machine's memory, and the stencil's compute charged as simulated time from
// the platform's calibrated rate instead of being done. With the normal MPI both are
// refused or are plain allocations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "hybridfd/stencil.hpp"

namespace hybridfd::tools {

// Floating-point operations of one lane of one point, as the kernel sums it (stencil.hpp):
// the centre's multiply, then per axis and distance a paired add, a multiply and an add
// (symmetric) or two multiplies and two adds. The platform's core speed is in these units.
double flops_per_lane(const Stencil& stencil);

// True in the SMPI build.
bool simulated();

// From now on the kernel does no work and each call charges flops_per_lane * lanes /
// threads as simulated compute (smpi_execute_flops): `threads` > 1 models a thread team
// that splits every region evenly (hybrid-master-only at the node's rate). Throws
// ValueError outside the SMPI build.
void use_modelled_compute(int threads = 1);

// From now on every batch a rank packs charges `seconds_per_lane` x the lanes it packed as
// simulated CPU time of that rank (at the host's core speed), when it packs them: the copy
// into the messages and the receivers' copies out of them, both paid by the sender, as
// the per-message cost is (docs/simulation.md, "The halo copy"). Not divided among a
// team's threads: hybrid-master-only's master packs alone. Throws ValueError outside the
// SMPI build.
void charge_halo_copies(double seconds_per_lane);

// Charges `seconds` of simulated CPU time to the calling rank: a thread
// team's synchronisation, at the host's core speed. Nothing for 0; ValueError outside
// the SMPI build otherwise.
void charge_seconds(double seconds);

// `arrays` arrays of `lanes` float64 values each: under SMPI with modelled compute one
// shared allocation per rank (SMPI_SHARED_MALLOC: every rank's block maps the same
// memory, whose content is then meaningless), else an ordinary zeroed allocation per
// array. One shared allocation, not one per array: each is at least one memory mapping
// per rank, and at 16,384 ranks two of them plus SimGrid's stacks pass the kernel's
// 65,530 mappings per process (vm.max_map_count). Ordinary arrays apart: a read past the
// end of the input then leaves its allocation instead of landing in the output, and
// AddressSanitizer sees it (make sanitize, docs/testing.md).
class GridStorage {
 public:
  GridStorage(std::int64_t lanes, int arrays, bool shared);
  ~GridStorage();
  GridStorage(const GridStorage&) = delete;
  GridStorage& operator=(const GridStorage&) = delete;
  double* data(int array) const {
    return shared_ ? data_ + static_cast<std::ptrdiff_t>(array) * lanes_ : own_[static_cast<std::size_t>(array)].get();
  }

 private:
  double* data_ = nullptr;                      // the shared allocation
  std::vector<std::unique_ptr<double[]>> own_;  // else one per array
  std::int64_t lanes_ = 0;
  bool shared_ = false;
};

}  // namespace hybridfd::tools
