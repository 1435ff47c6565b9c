// Kernel: the stencil on a region of a padded grid, written to an unpadded output.
#pragma once

#include "hybridfd/halo_plan.hpp"
#include "hybridfd/stencil.hpp"

namespace hybridfd {

// Applies `stencil` at the points of `region` (in box coordinates, i.e. 0-based in the
// unpadded box) of the padded grid `padded`, whose box extent and lane count `plan`
// describes, and writes them to the same points of the unpadded grid `out`. Each
// point's terms are summed in the order documented in stencil.hpp, with separate
// multiplies and adds (the build disables floating-point contraction), so the result
// does not depend on the compiler, the region split or the approach.
void apply_stencil(const Stencil& stencil, const HaloPlan& plan, const double* padded, const Region& region,
                   double* out);

}  // namespace hybridfd
