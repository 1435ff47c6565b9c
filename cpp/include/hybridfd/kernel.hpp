// Kernel: the stencil on a region of a padded grid, written to an unpadded output.
#pragma once

#include <cstdint>
#include <optional>

#include "hybridfd/array_ref.hpp"
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

// For simulation (cpp/tools/hybridfd-bench under SimGrid SMPI, docs/simulation.md): a
// function that stands in for the stencil's compute. When one is set, apply_stencil calls
// it with the stencil and the region's number of float64 lanes (points times lanes per
// point) instead of computing, so a simulator charges the time from a calibrated rate and
// the data stay untouched. Set it before any apply; nullptr (the default) computes.
using ComputeStandIn = void (*)(const Stencil& stencil, std::int64_t lanes);
void set_compute_stand_in(ComputeStandIn stand_in);
// True while a stand-in is set: the schedules then also skip copying grid interiors into
// their padded buffers (host memory traffic of the size of the whole problem that a
// simulator would otherwise spend, per simulated rank, for data nobody reads).
bool compute_stood_in();

// Checked entry for one grid already padded with r ghost layers per side: `padded` is
// (nx+2r, ny+2r, nz+2r), `out` is (nx, ny, nz), both C-contiguous float64 or complex128.
// Computes `region` (box coordinates; default the whole box) and leaves the rest of `out`
// untouched, split over `threads` threads by x-slabs of the region. For benchmarks and
// for callers with halo code of their own. Throws ValueError/TypeError naming the bad
// value (locally: no MPI involved).
void apply_stencil_to_padded(const Stencil& stencil, const ArrayRef& padded, const ArrayRef& out,
                             const std::optional<Region>& region = std::nullopt, int threads = 1);

}  // namespace hybridfd
