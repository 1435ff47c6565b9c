// The kernel's entries (hybridfd/kernel.hpp): checks, the choice of sweep
// (sweep_choice.cpp), the sweep of the stencil's radius (radius_<r>.cpp) and the fence
// of streamed stores.
#include "hybridfd/kernel.hpp"

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include <cstdint>

#include "../format.hpp"
#include "compute_stand_in.hpp"
#include "hybridfd/errors.hpp"
#include "hybridfd/thread_team.hpp"
#include "offsets_sweep.hpp"
#include "sweep_choice.hpp"

namespace hybridfd {
namespace {

#if defined(HYBRIDFD_SMPI)
ComputeStandIn compute_stand_in = nullptr;
#endif

void sweep_region(const kernel::Sweep& sweep, const Stencil& stencil, const HaloPlan& plan, const BoxInput& input,
                  const Region& region, double* out) {
  switch (stencil.radius) {
    case 1: return kernel::sweep_radius<1>(sweep, stencil, plan, input, region, out);
    case 2: return kernel::sweep_radius<2>(sweep, stencil, plan, input, region, out);
    case 3: return kernel::sweep_radius<3>(sweep, stencil, plan, input, region, out);
    case 4: return kernel::sweep_radius<4>(sweep, stencil, plan, input, region, out);
    case 5: return kernel::sweep_radius<5>(sweep, stencil, plan, input, region, out);
    case 6: return kernel::sweep_radius<6>(sweep, stencil, plan, input, region, out);
    default: Stencil::check_radius(stencil.radius);
  }
}

}  // namespace

#if defined(HYBRIDFD_SMPI)
void set_compute_stand_in(ComputeStandIn stand_in) { compute_stand_in = stand_in; }
#endif

void apply_stencil(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                   double* out, bool from_memory) {
  if (stencil.widths() != plan.widths()) throw ValueError("stencil widths differ from the halo plan's widths");
#if defined(HYBRIDFD_SMPI)
  if (compute_stand_in != nullptr) [[unlikely]] {
    compute_stand_in(stencil, region.points() * plan.lanes_per_point());
    return;
  }
#endif
  if (region.points() == 0) return;
  if (!stencil.star()) return kernel::sweep_offsets(stencil, plan, input, region, out, from_memory);
  const kernel::Sweep sweep = kernel::choose_sweep(plan, input, region, out, from_memory);
  sweep_region(sweep, stencil, plan, input, region, out);
#if defined(__AVX__)
  // Streamed stores are weakly ordered: they must be visible before whoever reads the
  // output (another thread of the team, MPI, the caller) is told it is written.
  if (sweep.output_streams) _mm_sfence();
#endif
}

BoxInput padded_input(const HaloPlan& plan, const double* padded) {
  const std::int64_t lanes = plan.lanes_per_point();
  const Offset& w = plan.widths();
  const Index3& p = plan.padded_extent();
  const std::int64_t stride_y = p[2] * lanes, stride_x = p[1] * stride_y;
  const auto at = [&](const Index3& begin) {
    return Rows{padded + begin[0] * stride_x + begin[1] * stride_y + begin[2] * lanes, stride_x, stride_y};
  };
  BoxInput input;
  input.box = at({w[0], w[1], w[2]});
  for (const Face& face : plan.faces()) input.block(face.send_tag) = at(face.ghost.begin);
  return input;
}

void apply_stencil(const Stencil& stencil, const HaloPlan& plan, const double* padded, const Region& region,
                   double* out) {
  apply_stencil(stencil, plan, padded_input(plan, padded), region, out, padded_grid_from_memory(plan));
}

void apply_stencil_to_padded(const Stencil& stencil, const ArrayRef& padded, const ArrayRef& out,
                             const std::optional<Region>& region, int threads, std::optional<bool> from_memory) {
  if (stencil.star()) Stencil::check_radius(stencil.radius);
  const ScalarType type = scalar_type_from_name(padded.dtype);
  if (out.dtype != padded.dtype)
    throw TypeError(detail::concat("output dtype ", out.dtype, " differs from the padded input's ", padded.dtype));
  if (padded.ndim != 3 || out.ndim != 3)
    throw ValueError(
        detail::concat("padded input and output must be 3-D, got ", padded.ndim, "-D and ", out.ndim, "-D"));
  const std::int64_t item = type == ScalarType::complex128 ? 16 : 8;
  Index3 extent{};
  const Offset widths = stencil.widths();
  for (int axis = 0; axis < 3; ++axis) {
    extent[axis] = out.shape[axis];
    if (padded.shape[axis] != extent[axis] + 2 * widths[axis])
      throw ValueError(detail::concat("padded input has shape ", detail::tuple_text(padded.shape, 3), "; output shape ",
                                      detail::tuple_text(out.shape, 3), " with ghost widths ",
                                      detail::tuple_text(widths), " needs the output's shape plus (", 2 * widths[0],
                                      ", ", 2 * widths[1], ", ", 2 * widths[2], ")"));
  }
  for (const ArrayRef* array : {&padded, &out})
    if (!array->c_contiguous(item))
      throw ValueError(detail::concat(array == &out ? "output" : "padded input", " is not C-contiguous: strides ",
                                      detail::tuple_text(array->strides, 3), " bytes"));
  if (!out.writable) throw ValueError("output array is read-only");
  const HaloPlan plan(extent, stencil, lanes_per_point(type));
  const auto* padded_begin = static_cast<const char*>(padded.data);
  const auto* out_begin = static_cast<const char*>(out.data);
  if (padded_begin < out_begin + plan.grid_lanes() * 8 && out_begin < padded_begin + plan.padded_lanes() * 8)
    throw ValueError("output array overlaps the padded input");
  const Region whole{{0, 0, 0}, extent};
  const Region part = region.value_or(whole);
  for (int axis = 0; axis < 3; ++axis)
    // Compared without forming begin + extent, which a huge region would overflow.
    if (part.begin[axis] < 0 || part.extent[axis] < 0 || part.begin[axis] > extent[axis] ||
        part.extent[axis] > extent[axis] - part.begin[axis])
      throw ValueError(detail::concat("region at ", detail::tuple_text(part.begin), " of extent ",
                                      detail::tuple_text(part.extent), " is not inside the box ",
                                      detail::tuple_text(extent)));
  const ThreadTeam team(threads);
  const BoxInput input = padded_input(plan, static_cast<const double*>(padded.data));
  auto* output = static_cast<double*>(const_cast<void*>(out.data));
  apply_stencil_in_slabs(stencil, plan, input, part, output, from_memory.value_or(padded_grid_from_memory(plan)), team);
}

void apply_stencil_in_slabs(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                            double* out, bool from_memory, const ThreadTeam& team) {
  const int threads = team.size();
  auto slab = [&](int thread) {
    Region mine = region;
    mine.begin[0] = region.begin[0] + region.extent[0] * thread / threads;
    mine.extent[0] = region.begin[0] + region.extent[0] * (thread + 1) / threads - mine.begin[0];
    if (mine.points() > 0) apply_stencil(stencil, plan, input, mine, out, from_memory);
  };
  team.run(slab);
}

}  // namespace hybridfd
