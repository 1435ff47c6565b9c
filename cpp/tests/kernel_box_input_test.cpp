// The kernel reading a box whose ghosts live apart from it (kernel.hpp, BoxInput: the
// user's unpadded grid plus a buffer per face in message layout) gives, bit for bit, what
// it gives on the same values held padded; random boxes (1..14 points per axis, rows
// shorter and longer than the kernel's vectors), radii 1..6, float64 and complex128,
// symmetric and general stencils, random regions (so that vectors meet a row's ends at
// every offset), arrays at every offset from 32-byte alignment, with and without
// prefetching; and boxes larger than the core's L2, whose output the kernel streams
// (non-temporal stores, one plane at a time) when prefetching and plainly when not, with
// regions of whole rows (streamed) and of parts of rows. Prints "ok" and exits 0, or names
// the failed case and exits 1.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "hybridfd/caches.hpp"
#include "hybridfd/kernel.hpp"

namespace {

using hybridfd::BoxInput;
using hybridfd::HaloPlan;
using hybridfd::Index3;
using hybridfd::Region;
using hybridfd::Rows;
using hybridfd::Stencil;

// A buffer of `lanes` doubles starting `offset` lanes past a 64-byte boundary.
struct Shifted {
  std::vector<double> storage;
  double* data;
  Shifted(std::int64_t lanes, std::int64_t offset) : storage(static_cast<std::size_t>(lanes + 16), 0.0) {
    const auto address = reinterpret_cast<std::uintptr_t>(storage.data());
    data = storage.data() + ((64 - address % 64) % 64) / sizeof(double) + offset;
  }
};

// Copies the points [begin, begin + extent) of the padded array (padded coordinates) to
// a contiguous buffer in C order.
std::vector<double> copy_out(const HaloPlan& plan, const std::vector<double>& padded, const Index3& begin,
                             const Index3& extent) {
  const std::int64_t lanes = plan.lanes_per_point();
  const Index3& p = plan.padded_extent();
  std::vector<double> buffer;
  for (std::int64_t x = 0; x < extent[0]; ++x)
    for (std::int64_t y = 0; y < extent[1]; ++y)
      for (std::int64_t lane = 0; lane < extent[2] * lanes; ++lane)
        buffer.push_back(padded[static_cast<std::size_t>(((begin[0] + x) * p[1] + begin[1] + y) * p[2] * lanes +
                                                         begin[2] * lanes + lane)]);
  return buffer;
}

}  // namespace

int main() {
  std::mt19937_64 random(20261123);
  auto uniform = [&](std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random);
  };
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  // The kernel streams the output of a box larger than the L2 (as glibc reads its size).
  long level2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (level2 <= 0) level2 = 1 << 20;
  // Compares the box input with the padded grid on one box: false (and the case printed)
  // where they differ. `tall`: whole rows, prefetched, of a box several of the kernel's
  // bands of rows tall, its region starting and ending inside bands.
  auto compare = [&](int trial, int radius, int lanes, const Index3& n, bool large, bool tall) {
    Stencil stencil = Stencil::laplace(radius, {0.3, 0.5, 0.7});
    if (trial % 3 == 0)  // a general (not symmetric) stencil
      for (auto& axis : stencil.plus)
        for (double& c : axis) c = value(random);
    const HaloPlan plan(n, radius, lanes);
    std::vector<double> padded(static_cast<std::size_t>(plan.padded_lanes()));
    for (double& v : padded) v = value(random);
    Shifted padded_shifted(plan.padded_lanes(), uniform(0, 3));
    std::copy(padded.begin(), padded.end(), padded_shifted.data);
    const std::int64_t r = radius;
    // The box and each face's ghosts in their own buffers, in message layout.
    const std::vector<double> box_values = copy_out(plan, padded, {r, r, r}, n);
    Shifted box(plan.grid_lanes(), uniform(0, 3));
    std::copy(box_values.begin(), box_values.end(), box.data);
    std::vector<double> ghosts[3][2];
    for (int axis = 0; axis < 3; ++axis)
      for (int side = 0; side < 2; ++side) {
        Index3 begin{r, r, r}, extent = n;
        begin[axis] = side == 0 ? 0 : n[axis] + r;
        extent[axis] = r;
        ghosts[axis][side] = copy_out(plan, padded, begin, extent);
      }
    const std::int64_t row = n[2] * lanes;
    const std::array<Rows, 3> layout{Rows{nullptr, n[1] * row, row}, Rows{nullptr, r * row, row},
                                     Rows{nullptr, n[1] * r * lanes, r * lanes}};
    BoxInput input{Rows{box.data, n[1] * row, row}, {}, {}, {}};
    std::array<Rows, 2>* faces[3] = {&input.x_ghosts, &input.y_ghosts, &input.z_ghosts};
    for (int axis = 0; axis < 3; ++axis)
      for (int side = 0; side < 2; ++side) {
        Rows rows = layout[static_cast<std::size_t>(axis)];
        rows.first = ghosts[axis][side].data();
        (*faces[axis])[static_cast<std::size_t>(side)] = rows;
      }
    Region region;
    for (int axis = 0; axis < 3; ++axis) {
      region.begin[axis] = uniform(0, n[axis] - 1);
      region.extent[axis] = uniform(1, n[axis] - region.begin[axis]);
    }
    if (trial % 4 == 0) region = Region{{0, 0, 0}, n};
    if (large && trial % 4 == 1) region.begin[2] = 0, region.extent[2] = n[2];  // whole rows: streamed
    if (trial % 4 == 3) {  // an overlap z shell: the r points at one end of every row
      const std::int64_t thick = std::min<std::int64_t>(r, n[2]);
      region.begin[2] = uniform(0, 1) == 0 ? 0 : n[2] - thick, region.extent[2] = thick;
    }
    if (tall) {
      region.begin[2] = 0, region.extent[2] = n[2];
      region.begin[1] = uniform(0, n[1] / 4), region.extent[1] = n[1] - region.begin[1] - uniform(0, n[1] / 4);
    }
    Shifted expected(plan.grid_lanes(), uniform(0, 3)), got(plan.grid_lanes(), uniform(0, 3));
    hybridfd::apply_stencil(stencil, plan, padded_shifted.data, region, expected.data);
    hybridfd::apply_stencil(stencil, plan, input, region, got.data, tall || trial % 2 == 0);
    if (std::memcmp(expected.data, got.data, static_cast<std::size_t>(plan.grid_lanes()) * sizeof(double)) != 0) {
      std::printf(
          "FAILED: trial %d, box %lldx%lldx%lld, radius %d, lanes %d, region at (%lld,%lld,%lld) of "
          "(%lld,%lld,%lld)\n",
          trial, static_cast<long long>(n[0]), static_cast<long long>(n[1]), static_cast<long long>(n[2]), radius,
          lanes, static_cast<long long>(region.begin[0]), static_cast<long long>(region.begin[1]),
          static_cast<long long>(region.begin[2]), static_cast<long long>(region.extent[0]),
          static_cast<long long>(region.extent[1]), static_cast<long long>(region.extent[2]));
      return false;
    }
    return true;
  };
  constexpr int small_trials = 600, large_trials = 48, tall_trials = 8;
  for (int trial = 0; trial < small_trials + large_trials; ++trial) {
    const bool large = trial >= small_trials;
    const int radius = static_cast<int>(uniform(1, 6));
    const int lanes = static_cast<int>(uniform(1, 2));
    Index3 n{uniform(1, 14), uniform(1, 14), uniform(1, 14)};
    if (large) {  // rows of every length mod 4 (so of every alignment), at least 3 vectors
      n[1] = uniform(radius, 40), n[2] = uniform(12, 140);
      n[0] = level2 / (n[1] * n[2] * lanes * 8) + uniform(1, 3);
    }
    if (!compare(trial, radius, lanes, n, large, false)) return 1;
  }
  // Boxes taller than the bands of rows a prefetched apply sweeps (the kernel's own
  // formula, row_slide.hpp's band_rows, from the larger of half the L2 and half the
  // last-level share), whose rows all slide apart: each band's first row starts the
  // slide's row pointers afresh.
  const hybridfd::CacheSizes caches = hybridfd::cache_sizes();
  const std::int64_t budget = std::max(caches.level2, caches.last_level_share) / 2;
  for (int trial = 0; trial < tall_trials; ++trial) {
    const int radius = static_cast<int>(uniform(1, 6));
    const int lanes = static_cast<int>(uniform(1, 2));
    Index3 n{uniform(1, 3), 0, uniform(12, 40)};
    const std::int64_t row_bytes = (n[2] + 2 * radius) * lanes * 8;
    const std::int64_t band =
        std::max<std::int64_t>(1, budget / ((lanes == 1 ? 2 * radius + 2 : 2 * radius + 1) * row_bytes) - 2 * radius);
    n[1] = 2 * band + uniform(band / 2, band);
    if (!compare(trial, radius, lanes, n, true, true)) return 1;
  }
  std::printf("ok\n");
  return 0;
}
