// For simulation (cpp/tools/hybridfd-bench under SimGrid SMPI, docs/simulation.md): a
// function that stands in for the stencil's compute. When one is set, apply_stencil calls
// it with the stencil and the region's number of float64 lanes (points times lanes per
// point) instead of computing, so a simulator charges the time from a calibrated rate and
// the data stay untouched. Set it before any apply; nullptr (the default) computes.
// Private to the build (cpp/tools includes it), and compiled only into SMPI builds
// (-DHYBRIDFD_SMPI=ON): no part of the public API or of the Python extension.
#pragma once

#include <cstdint>

#include "hybridfd/stencil.hpp"

namespace hybridfd {

using ComputeStandIn = void (*)(const Stencil& stencil, std::int64_t lanes);
void set_compute_stand_in(ComputeStandIn stand_in);

}  // namespace hybridfd
