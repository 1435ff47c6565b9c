#include "offsets_sweep.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace hybridfd::kernel {
namespace {

// Where a padded coordinate c of an axis lies: -1 below the box, 0 in it, 1 above; and
// its coordinate inside that block.
struct AxisPlace {
  int side;
  std::int64_t local;
};
AxisPlace place(std::int64_t c, std::int64_t n, std::int64_t w) {
  if (c < 0) return {-1, c + w};
  if (c >= n) return {1, c - n};
  return {0, c};
}

// One padded plane of the region: rows y in [y0 - wy, y1 + wy), each of the points
// z in [z0 - wz, z1 + wz), copied from the blocks they lie in. Blocks of directions the
// plan does not exchange are never read by the stencil; their points are zeroed.
struct PlaneAssembler {
  const HaloPlan& plan;
  const BoxInput& input;
  const Region& region;
  std::int64_t rows, row_lanes;

  void fill(std::int64_t x, double* plane) const {
    const Index3& n = plan.extent();
    const Offset& w = plan.widths();
    const std::int64_t lanes = plan.lanes_per_point();
    const AxisPlace px = place(x, n[0], w[0]);
    const std::int64_t z_low = region.begin[2] - w[2], z_high = region.begin[2] + region.extent[2] + w[2];
    for (std::int64_t row = 0; row < rows; ++row) {
      const AxisPlace py = place(region.begin[1] - w[1] + row, n[1], w[1]);
      double* target = plane + row * row_lanes;
      // The row's three z runs: below the box, in it, above it.
      const std::int64_t cuts[4] = {z_low, std::clamp<std::int64_t>(0, z_low, z_high),
                                    std::clamp<std::int64_t>(n[2], z_low, z_high), z_high};
      for (int part = 0; part < 3; ++part) {
        const std::int64_t begin = cuts[part], end = cuts[part + 1];
        if (begin >= end) continue;
        const int sz = part - 1;
        const std::int64_t local_z = sz < 0 ? begin + w[2] : sz > 0 ? begin - n[2] : begin;
        double* to = target + (begin - z_low) * lanes;
        const std::size_t bytes = static_cast<std::size_t>((end - begin) * lanes) * sizeof(double);
        const Rows* rows_of = nullptr;
        if (px.side == 0 && py.side == 0 && sz == 0) {
          rows_of = &input.box;
        } else {
          const int tag = direction_tag({px.side, py.side, sz});
          if (plan.directions() & (DirectionSet{1} << tag)) rows_of = &input.block(tag);
        }
        if (rows_of == nullptr)
          std::memset(to, 0, bytes);
        else
          std::memcpy(to, rows_of->at(px.local, py.local) + local_z * lanes, bytes);
      }
    }
  }
};

// The terms of the sum as offsets into the ring: plane (dx), and lanes within the
// plane (dy rows, dz points).
struct RingTerm {
  int plane;
  std::int64_t shift, partner_shift;
  int partner_plane;
  double weight;
  bool paired;
};

}  // namespace

void sweep_offsets(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                   double* out) {
  const Index3& n = plan.extent();
  const Offset& w = plan.widths();
  const std::int64_t lanes = plan.lanes_per_point();
  const std::int64_t rows = region.extent[1] + 2 * w[1];
  const std::int64_t row_lanes = (region.extent[2] + 2 * w[2]) * lanes;
  const std::int64_t plane_lanes = rows * row_lanes;
  const int ring = 2 * w[0] + 1;
  // The ring, grown once per thread to the largest plane it meets.
  thread_local std::vector<double> workspace;
  const auto needed = static_cast<std::size_t>(ring * plane_lanes);
  if (workspace.size() < needed) workspace.resize(needed);
  double* planes = workspace.data();
  const PlaneAssembler assembler{plan, input, region, rows, row_lanes};
  thread_local std::vector<RingTerm> terms;  // capacity kept: no allocation after the first call
  terms.clear();
  for (const StencilTerm& term : stencil.terms)
    terms.push_back({term.offset[0], (term.offset[1] + w[1]) * row_lanes + (term.offset[2] + w[2]) * lanes,
                     (-term.offset[1] + w[1]) * row_lanes + (-term.offset[2] + w[2]) * lanes, -term.offset[0],
                     term.weight, term.paired});
  const std::int64_t out_y = n[2] * lanes, out_x = n[1] * out_y;
  const std::int64_t x_begin = region.begin[0], x_end = region.begin[0] + region.extent[0];
  const auto slot = [&](std::int64_t x) { return planes + ((x % ring + ring) % ring) * plane_lanes; };
  for (std::int64_t x = x_begin - w[0]; x < x_begin + w[0]; ++x) assembler.fill(x, slot(x));
  const std::int64_t row_out = region.extent[2] * lanes;
  constexpr std::int64_t chunk = 64;
  for (std::int64_t x = x_begin; x < x_end; ++x) {
    assembler.fill(x + w[0], slot(x + w[0]));
    for (std::int64_t y = 0; y < region.extent[1]; ++y) {
      double* target = out + x * out_x + (region.begin[1] + y) * out_y + region.begin[2] * lanes;
      const std::int64_t row = y * row_lanes;
      for (std::int64_t first = 0; first < row_out; first += chunk) {
        const std::int64_t count = std::min(chunk, row_out - first);
        double acc[chunk];
        bool started = false;
        for (const RingTerm& term : terms) {
          const double* a = slot(x + term.plane) + row + term.shift + first;
          const double* b = slot(x + term.partner_plane) + row + term.partner_shift + first;
          const double weight = term.weight;
          if (!started) {
            if (term.paired)
              for (std::int64_t i = 0; i < count; ++i) acc[i] = weight * (a[i] + b[i]);
            else
              for (std::int64_t i = 0; i < count; ++i) acc[i] = weight * a[i];
            started = true;
          } else if (term.paired) {
            for (std::int64_t i = 0; i < count; ++i) acc[i] = acc[i] + weight * (a[i] + b[i]);
          } else {
            for (std::int64_t i = 0; i < count; ++i) acc[i] = acc[i] + weight * a[i];
          }
        }
        std::memcpy(target + first, acc, static_cast<std::size_t>(count) * sizeof(double));
      }
    }
  }
}

}  // namespace hybridfd::kernel
