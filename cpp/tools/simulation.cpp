#include "simulation.hpp"

#include "hybridfd/errors.hpp"
#include "hybridfd/kernel.hpp"

#ifdef HYBRIDFD_SMPI
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

void use_modelled_compute() {
#ifdef HYBRIDFD_SMPI
  set_compute_stand_in([](const Stencil& stencil, std::int64_t lanes) {
    smpi_execute_flops(flops_per_lane(stencil) * static_cast<double>(lanes));
  });
#else
  throw ValueError("--compute modelled needs the SimGrid SMPI build of hybridfd-bench (cmake -DHYBRIDFD_SMPI=ON)");
#endif
}

GridStorage::GridStorage(std::int64_t lanes, bool shared) : shared_(shared) {
  const auto bytes = static_cast<std::size_t>(lanes > 0 ? lanes : 1) * sizeof(double);
#ifdef HYBRIDFD_SMPI
  if (shared_) {
    data_ = static_cast<double*>(SMPI_SHARED_MALLOC(bytes));
    return;
  }
#else
  if (shared_) throw ValueError("shared grid storage needs the SimGrid SMPI build of hybridfd-bench");
#endif
  data_ = new double[bytes / sizeof(double)]();
}

GridStorage::~GridStorage() {
#ifdef HYBRIDFD_SMPI
  if (shared_) {
    SMPI_SHARED_FREE(data_);
    return;
  }
#endif
  delete[] data_;
}

}  // namespace hybridfd::tools
