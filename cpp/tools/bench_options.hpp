// The command line of hybridfd-bench: the options of `hybridfd run` (src/hybridfd/cli/
// run.py), so the C++ driver runs any configuration the Python Operator runs, plus what
// only a driver without Python needs (result check, compute under simulation).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hybridfd/decomposition.hpp"
#include "hybridfd/operator.hpp"

namespace hybridfd::tools {

// How the stencil's compute is done: really, or (under SimGrid SMPI only) injected as
// simulated time from the platform's calibrated rate without touching the data.
enum class Compute { real, modelled };
// Whether the result is compared with the stencil evaluated directly on the field's
// formula: auto does it when the problem is small (see check_limit_points).
enum class Check { automatic, on, off };

// Above this many grid points per rank (all grids), --check auto skips the reference.
inline constexpr std::int64_t check_limit_points = std::int64_t{1} << 22;

struct BenchOptions {
  std::int64_t grids = 8;
  Index3 shape{64, 64, 64};
  std::string dtype = "float64";
  std::array<bool, 3> periodic{true, true, true};
  int radius = 2;
  double spacing = 0.2;
  std::optional<ProcessGrid> grid;
  Options op;  // approach and the Operator's overrides
  int repeats = 5;
  Check check = Check::automatic;
  Compute compute = Compute::real;
  // Threads at scale under SMPI (docs/simulation.md, "Threads at scale"): the ranks split
  // into this many groups (rank r in group r % groups), each a decomposition of its own
  // owning a share of the grids (GPAW journal Sect. 7.2's equivalence for hybrid-multiple).
  int grid_groups = 1;
  // Modelled compute split evenly over this many threads (hybrid-master-only: one rank per
  // node at the node's rate), and thread-team synchronisation charged per batch step and
  // per apply (seconds, measured on this machine). Modelled compute only.
  int node_cores = 1;
  double sync_per_batch = 0.0;
  double sync_per_apply = 0.0;
  // CPU seconds per halo lane a rank packs, charged when it packs a batch: the copy into
  // the message and the receiver's copy out of it (docs/simulation.md, "The halo copy").
  // Modelled compute only.
  double halo_copy_per_lane = 0.0;
  std::string output;  // also write the JSON record here
  std::vector<std::string> argv;
};

// Parses argv (without the program name). Throws ValueError naming the option and the
// bad value; "--help" returns nullopt after printing the usage on rank 0.
std::optional<BenchOptions> parse_options(int argc, char** argv, bool print_help);
std::string usage();

}  // namespace hybridfd::tools
