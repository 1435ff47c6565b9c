// The sweep of a general stencil (any offsets, Stencil::terms), on any BoxInput: its
// input is assembled plane by plane into a ring of padded planes (edge and corner ghosts
// included, from wherever their blocks live), which the terms then read as plain rows.
#pragma once

#include "hybridfd/halo_plan.hpp"
#include "hybridfd/kernel.hpp"
#include "hybridfd/stencil.hpp"

namespace hybridfd::kernel {

// Applies the general `stencil` at the points of `region`, as apply_stencil documents.
void sweep_offsets(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                   double* out);

}  // namespace hybridfd::kernel
