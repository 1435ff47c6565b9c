// The sweep of a general stencil (any offsets, Stencil::terms), on any BoxInput: its
// input is assembled plane by plane into a ring of padded planes (edge and corner ghosts
// included, from wherever their blocks live), which the terms then read as plain rows.
// On the build's widest vectors (wide_vector.hpp) each term's weight and row addresses
// are loaded once for a block of output vectors whose sums stay in registers over the
// terms; the next plane is assembled while one is summed, a share of its rows after each
// output row; an output that cannot stay in the L2 is streamed past the caches.
#pragma once

#include "hybridfd/halo_plan.hpp"
#include "hybridfd/kernel.hpp"
#include "hybridfd/stencil.hpp"

namespace hybridfd::kernel {

// Applies the general `stencil` at the points of `region`, as apply_stencil documents
// (`from_memory` included); streamed stores are fenced before it returns.
void sweep_offsets(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                   double* out, bool from_memory);

}  // namespace hybridfd::kernel
