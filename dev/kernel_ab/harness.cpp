// Two builds of the stencil kernel side by side in one process: "a" and "b", the same
// sources at two revisions, each compiled by the same command and renamed
// (apply_stencil -> apply_stencil_a / _b) by dev/kernel_ab.py, which
// builds and runs this file. Rounds alternate a, b, b, a, ... so drifts of a noisy
// machine fall on both alike; each kernel's time is its fastest round. Before each run
// the thread's issue rate is probed (cpp/probes' measure_issue_rate, 5 ms): about half its
// best when another hardware thread shares the core, which kernel_ab.py uses to compare
// the kernels within each state. Prints one JSON line: both rates, their ratio, whether
// every output lane agrees bit for bit, and each round's issue rates and times.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hybridfd/kernel.hpp"
#include "probes.hpp"

namespace hybridfd {
void apply_stencil_a(const Stencil&, const HaloPlan&, const BoxInput&, const Region&, double*, bool);
void apply_stencil_b(const Stencil&, const HaloPlan&, const BoxInput&, const Region&, double*, bool);
void apply_stencil_a(const Stencil&, const HaloPlan&, const double*, const Region&, double*);
void apply_stencil_b(const Stencil&, const HaloPlan&, const double*, const Region&, double*);
BoxInput padded_input_a(const HaloPlan&, const double*);
}  // namespace hybridfd

using namespace hybridfd;

namespace {

struct Options {
  int n = 96, grids = 32, lanes = 1, radius = 2, rounds = 9, repeats = 1;
  bool padded = false;              // apply_stencil on padded grids, else an apply's box input
  bool told_in_cache = false;       // from_memory = false (else true; padded: decided by the grid's size)
  bool input_in_cache = false;      // every grid reads the first grid's input
  bool output_in_cache = false;     // every grid writes the first grid's output
  int offset = 0;                   // lanes past 64-byte alignment of every array
  bool huge_pages = false;          // madvise(MADV_HUGEPAGE) every array, as numpy does from 4 MiB
  bool interior_on_a_line = false;  // the padded grids' interiors (not their starts) on the boundary
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "%s\nusage: kernel_ab [--n N] [--grids G] [--dtype float64|complex128] [--radius R] [--rounds K]\n"
               "  [--repeats M] [--padded] [--told-in-cache] [--input-in-cache] [--output-in-cache] "
               "[--offset LANES] "
               "[--huge-pages] [--interior-on-a-line]\n",
               problem.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + std::string(flag));
      return argv[++i];
    };
    if (flag == "--n")
      o.n = std::stoi(value());
    else if (flag == "--grids")
      o.grids = std::stoi(value());
    else if (flag == "--radius")
      o.radius = std::stoi(value());
    else if (flag == "--rounds")
      o.rounds = std::stoi(value());
    else if (flag == "--repeats")
      o.repeats = std::stoi(value());
    else if (flag == "--offset")
      o.offset = std::stoi(value());
    else if (flag == "--padded")
      o.padded = true;
    else if (flag == "--told-in-cache")
      o.told_in_cache = true;
    else if (flag == "--input-in-cache")
      o.input_in_cache = true;
    else if (flag == "--output-in-cache")
      o.output_in_cache = true;
    else if (flag == "--huge-pages")
      o.huge_pages = true;
    else if (flag == "--interior-on-a-line")
      o.interior_on_a_line = true;
    else if (flag == "--dtype") {
      const std::string dtype = value();
      if (dtype != "float64" && dtype != "complex128") usage("unknown dtype " + dtype);
      o.lanes = dtype == "complex128" ? 2 : 1;
    } else {
      usage("unknown option " + std::string(flag));
    }
  }
  if (o.n < 1 || o.grids < 1 || o.rounds < 1 || o.repeats < 1 || o.offset < 0 || o.offset > 7)
    usage("sizes, rounds and repeats must be positive, the offset 0..7");
  return o;
}

// `lanes` float64 lanes whose lane `first` lies `offset` lanes past a 64-byte boundary
// (hybridfd.arrays places a padded grid's interior so, numpy an array's start 16 bytes
// past one), zeroed (pages touched).
struct Array {
  std::vector<double> storage;
  double* data;
  Array(std::int64_t lanes, int offset, bool huge_pages, std::int64_t first = 0) {
    storage.reserve(lanes + 16);
    auto address = reinterpret_cast<std::uintptr_t>(storage.data());
    if (huge_pages) {  // before the pages are first touched
      const std::uintptr_t page = 4096, begin = (address + page - 1) / page * page;
      const std::uintptr_t end = (address + (lanes + 16) * 8) / page * page;
      if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    }
    storage.assign(lanes + 16, 0.0);
    const std::uintptr_t first_bytes = static_cast<std::uintptr_t>(first % 8) * 8;
    data = reinterpret_cast<double*>((address + first_bytes + 63) / 64 * 64 - first_bytes) + offset;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const Stencil stencil = Stencil::laplace(o.radius, {1.0, 1.0, 1.0});
  const HaloPlan plan({o.n, o.n, o.n}, o.radius, o.lanes);
  const std::int64_t n = o.n, r = o.radius, L = o.lanes, padded_lanes = plan.padded_lanes(),
                     grid_lanes = plan.grid_lanes();
  const std::int64_t input_grids = o.input_in_cache ? 1 : o.grids, output_grids = o.output_in_cache ? 1 : o.grids;

  // Random padded grids; for box input the same values as an apply holds them: the box
  // unpadded, each side's ghost layers in a compact buffer of its own (as received).
  const std::int64_t p = n + 2 * r, py = p * L, px = p * py;
  Array padded(padded_lanes * input_grids, o.offset, o.huge_pages, o.interior_on_a_line ? r * (px + py + L) : 0);
  std::mt19937_64 random(1);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (std::int64_t i = 0; i < padded_lanes * input_grids; ++i) padded.data[i] = uniform(random);
  auto padded_at = [&](std::int64_t g, std::int64_t x, std::int64_t y, std::int64_t z) {
    return padded.data + g * padded_lanes + x * px + y * py + z * L;
  };
  Array box(o.padded ? 0 : grid_lanes * input_grids, o.offset, o.huge_pages);
  const std::int64_t slab = r * n * n * L;  // lanes of one side's ghosts, per axis
  Array ghosts(o.padded ? 0 : 6 * slab * input_grids, o.offset, o.huge_pages);
  std::vector<BoxInput> inputs(input_grids);
  for (std::int64_t g = 0; !o.padded && g < input_grids; ++g) {
    double* own = box.data + g * grid_lanes;
    for (std::int64_t x = 0; x < n; ++x)
      for (std::int64_t y = 0; y < n; ++y)
        std::memcpy(own + (x * n + y) * n * L, padded_at(g, x + r, y + r, r), n * L * 8);
    double* buffer = ghosts.data + g * 6 * slab;
    BoxInput& input = inputs[g];
    input.box = {own, n * n * L, n * L};
    for (int side = 0; side < 2; ++side) {
      double* xs = buffer + (0 + side) * slab;  // planes i, rows y: (r, n, n)
      double* ys = buffer + (2 + side) * slab;  // rows (x, j): (n, r, n)
      double* zs = buffer + (4 + side) * slab;  // points beyond row (x, y): (n, n, r)
      const std::int64_t x0 = side == 0 ? 0 : n + r, y0 = side == 0 ? 0 : n + r, z0 = side == 0 ? 0 : n + r;
      for (std::int64_t i = 0; i < r; ++i)
        for (std::int64_t y = 0; y < n; ++y)
          std::memcpy(xs + (i * n + y) * n * L, padded_at(g, x0 + i, y + r, r), n * L * 8);
      for (std::int64_t x = 0; x < n; ++x)
        for (std::int64_t j = 0; j < r; ++j)
          std::memcpy(ys + (x * r + j) * n * L, padded_at(g, x + r, y0 + j, r), n * L * 8);
      for (std::int64_t x = 0; x < n; ++x)
        for (std::int64_t y = 0; y < n; ++y)
          std::memcpy(zs + (x * n + y) * r * L, padded_at(g, x + r, y + r, z0), r * L * 8);
      input.x_ghosts[side] = {xs, n * n * L, n * L};
      input.y_ghosts[side] = {ys, r * n * L, n * L};
      input.z_ghosts[side] = {zs, n * r * L, r * L};
    }
  }

  // Two output arrays, and each kernel writes each of them in turn: where the two arrays
  // lie in physical memory moved identical kernels apart by 12 % (outputs from memory,
  // input in cache), which alternating spreads over both.
  Array outputs[2] = {Array(grid_lanes * output_grids, o.offset, o.huge_pages),
                      Array(grid_lanes * output_grids, o.offset, o.huge_pages)};
  const Region whole{{0, 0, 0}, {o.n, o.n, o.n}};
  auto run = [&](bool b, double* out) {
    const auto start = std::chrono::steady_clock::now();
    for (int repeat = 0; repeat < o.repeats; ++repeat)
      for (std::int64_t g = 0; g < o.grids; ++g) {
        const std::int64_t in = o.input_in_cache ? 0 : g, to = o.output_in_cache ? 0 : g;
        double* target = out + to * grid_lanes;
        if (o.padded) {
          const double* source = padded.data + in * padded_lanes;
          if (o.told_in_cache) {  // as hybridfd.kernel.apply_padded(..., from_memory=False)
            const BoxInput input = padded_input_a(plan, source);
            b ? apply_stencil_b(stencil, plan, input, whole, target, false)
              : apply_stencil_a(stencil, plan, input, whole, target, false);
          } else {
            b ? apply_stencil_b(stencil, plan, source, whole, target)
              : apply_stencil_a(stencil, plan, source, whole, target);
          }
        } else {
          b ? apply_stencil_b(stencil, plan, inputs[in], whole, target, !o.told_in_cache)
            : apply_stencil_a(stencil, plan, inputs[in], whole, target, !o.told_in_cache);
        }
      }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / o.repeats;
  };
  // Rounds go a, b, b, a, a, b, ...; in round k kernel a writes outputs[k % 2] and b the other.
  double best_a = 1e300, best_b = 1e300;
  std::string rounds;  // [a issue rate, a seconds, b issue rate, b seconds] per round
  for (int round = 0; round < o.rounds; ++round) {
    const bool b_first = round % 2 == 1;
    double issue[2], seconds[2];
    for (const bool b : {b_first, !b_first}) {
      issue[b] = measure_issue_rate(0.005);
      seconds[b] = run(b, outputs[(round + (b ? 1 : 0)) % 2].data);
      double& best = b ? best_b : best_a;
      best = std::min(best, seconds[b]);
    }
    char entry[128];
    std::snprintf(entry, sizeof entry, "%s[%.3f, %.6e, %.3f, %.6e]", round == 0 ? "" : ", ", issue[0], seconds[0],
                  issue[1], seconds[1]);
    rounds += entry;
  }
  const bool identical = std::memcmp(outputs[0].data, outputs[1].data, grid_lanes * output_grids * 8) == 0;
  const double points = double(n) * n * n * o.grids;
  std::printf(
      "{\"a_mpoints_per_s\": %.1f, \"b_mpoints_per_s\": %.1f, \"b_over_a\": %.4f, \"bit_identical\": %s, "
      "\"rounds\": [%s]}\n",
      points / best_a / 1e6, points / best_b / 1e6, best_a / best_b, identical ? "true" : "false", rounds.c_str());
  return identical ? 0 : 1;
}
