#include "simulation.hpp"

#include "../src/kernel/compute_stand_in.hpp"
#include "hybridfd/errors.hpp"
#include "hybridfd/halo_plan.hpp"
#include "hybridfd/kernel.hpp"

#ifdef HYBRIDFD_SMPI
#include <simgrid/host.h>
#include <smpi/smpi.h>
#endif

namespace hybridfd::tools {

double flops_per_lane(const Stencil& stencil) {
  const int terms_per_distance = stencil.symmetric() ? 3 : 4;
  return 1.0 + 3.0 * stencil.radius * terms_per_distance;
}

bool simulated() {
#ifdef HYBRIDFD_SMPI
  return true;
#else
  return false;
#endif
}

void use_modelled_compute(int threads) {
#ifdef HYBRIDFD_SMPI
  static int team = 1;  // the stand-in is a plain function pointer: no capture
  team = threads;
  set_compute_stand_in([](const Stencil& stencil, std::int64_t lanes) {
    smpi_execute_flops(flops_per_lane(stencil) * static_cast<double>(lanes) / team);
  });
#else
  (void)threads;
  throw ValueError("--compute modelled needs the SimGrid SMPI build of hybridfd-bench (cmake -DHYBRIDFD_SMPI=ON)");
#endif
}

void charge_halo_copies(double seconds_per_lane) {
#ifdef HYBRIDFD_SMPI
  static double per_lane = 0.0;  // the charge is a plain function pointer: no capture
  per_lane = seconds_per_lane;
  set_pack_charge([](std::int64_t lanes) { charge_seconds(per_lane * static_cast<double>(lanes)); });
#else
  (void)seconds_per_lane;
  throw ValueError("charging halo copies needs the SimGrid SMPI build of hybridfd-bench (cmake -DHYBRIDFD_SMPI=ON)");
#endif
}

void charge_seconds(double seconds) {
  if (seconds <= 0) return;
#ifdef HYBRIDFD_SMPI
  // smpi_execute would convert with smpi/host-speed (a benchmarking reference); the
  // team's cost is seconds of this host's core, so charge them at its speed.
  smpi_execute_flops(seconds * sg_host_get_speed(sg_host_self()));
#else
  throw ValueError("charging simulated time needs the SimGrid SMPI build of hybridfd-bench");
#endif
}

GridStorage::GridStorage(std::int64_t lanes, int arrays, bool shared) : lanes_(lanes > 0 ? lanes : 1), shared_(shared) {
  if (shared_) {
#ifdef HYBRIDFD_SMPI
    data_ = static_cast<double*>(
        SMPI_SHARED_MALLOC(static_cast<std::size_t>(lanes_) * static_cast<std::size_t>(arrays) * sizeof(double)));
    return;
#else
    throw ValueError("shared grid storage needs the SimGrid SMPI build of hybridfd-bench");
#endif
  }
  for (int array = 0; array < arrays; ++array) own_.emplace_back(new double[static_cast<std::size_t>(lanes_)]());
}

GridStorage::~GridStorage() {
#ifdef HYBRIDFD_SMPI
  if (shared_) SMPI_SHARED_FREE(data_);
#endif
}

}  // namespace hybridfd::tools
