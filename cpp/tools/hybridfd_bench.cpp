// hybridfd-bench: the pure C++ driver (docs/design.md, cpp/tools). Runs one configuration
// of the Operator on the C++ core alone, with the options of `hybridfd run`, and prints the
// same JSON result record (src/hybridfd/schemas/result.schema.json). Its input is the
// formula field of test_field.hpp; the result is checked against the stencil evaluated
// directly on that formula where the problem is small, and summarised by a checksum that
// Python computes identically (hybridfd.simulate.driver). Built with SimGrid's smpicxx
// (-DHYBRIDFD_SMPI=ON) it is the program SMPI simulates at Blue Gene/P scale
// (GPAW journal Sect. 7; docs/simulation.md).
//
//   mpiexec -n 2 hybridfd-bench --approach flat-optimized --grids 16 --shape 64
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <hybridfd/hybridfd.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "json.hpp"
#include "simulation.hpp"
#include "test_field.hpp"

namespace hybridfd::tools {
namespace {

std::int64_t wrap(std::int64_t i, std::int64_t n) { return ((i % n) + n) % n; }

// The stencil at global point p of grid g, lane `lane`, evaluated directly on the field's
// formula in the documented order (stencil.hpp); zero beyond a non-periodic edge.
double reference_value(const Stencil& stencil, const Domain& domain, std::int64_t g, const Index3& p,
                       std::int64_t lane) {
  auto at = [&](Index3 q) {
    for (int axis = 0; axis < 3; ++axis) {
      if (q[axis] >= 0 && q[axis] < domain.shape[axis]) continue;
      if (!domain.periodic[axis]) return 0.0;
      q[axis] = wrap(q[axis], domain.shape[axis]);
    }
    return field_value(g, q[0], q[1], q[2], lane);
  };
  double sum = stencil.centre * at(p);
  for (int axis = 0; axis < 3; ++axis)
    for (int d = 1; d <= stencil.radius; ++d) {
      Index3 lower = p, upper = p;
      lower[axis] -= d, upper[axis] += d;
      if (stencil.symmetric()) {
        sum += stencil.minus[axis][d - 1] * (at(lower) + at(upper));
      } else {
        sum += stencil.minus[axis][d - 1] * at(lower);
        sum += stencil.plus[axis][d - 1] * at(upper);
      }
    }
  return sum;
}

// Visits every lane of this rank's grids in C order (g, x, y, z, lane) with its global
// coordinates and its index in the local batch.
template <class Visit>
void for_each_lane(const Box& box, std::int64_t grids, std::int64_t lanes, Visit&& visit) {
  const auto& [offset, extent] = box;
  std::int64_t index = 0;
  for (std::int64_t g = 0; g < grids; ++g)
    for (std::int64_t x = 0; x < extent[0]; ++x)
      for (std::int64_t y = 0; y < extent[1]; ++y)
        for (std::int64_t z = 0; z < extent[2]; ++z)
          for (std::int64_t lane = 0; lane < lanes; ++lane)
            visit(g, Index3{offset[0] + x, offset[1] + y, offset[2] + z}, lane, index++);
}

// The ranks' partial sums added in rank order on rank 0 (the same on every rank after).
double sum_in_rank_order(MPI_Comm comm, double partial) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  std::vector<double> partials(rank == 0 ? static_cast<std::size_t>(size) : 1);
  MPI_Gather(&partial, 1, MPI_DOUBLE, partials.data(), 1, MPI_DOUBLE, 0, comm);
  double total = 0.0;
  if (rank == 0)
    for (const double p : partials) total += p;
  MPI_Bcast(&total, 1, MPI_DOUBLE, 0, comm);
  return total;
}

double checksum(MPI_Comm comm, const Box& box, std::int64_t grids, std::int64_t first_grid, std::int64_t lanes,
                const double* values) {
  double partial = 0.0;
  for_each_lane(box, grids, lanes, [&](std::int64_t g, const Index3& p, std::int64_t lane, std::int64_t i) {
    partial += values[i] * checksum_weight(first_grid + g, p[0], p[1], p[2], lane);
  });
  return sum_in_rank_order(comm, partial);
}

// The ranks of MPI_COMM_WORLD in `groups` groups, rank r in group r % groups (so with
// ranks packed onto nodes of `groups` cores each group has one rank per node), each group
// owning a contiguous share of the grids, as even as they split.
struct GridGroup {
  MPI_Comm comm = MPI_COMM_WORLD;
  int index = 0;
  std::int64_t first_grid = 0;
  std::int64_t grids = 0;
};

GridGroup grid_group(const BenchOptions& options, int rank, int size) {
  const int groups = options.grid_groups;
  if (size % groups != 0)
    throw ValueError("--grid-groups " + std::to_string(groups) + ": " + std::to_string(size) +
                     " ranks do not split into groups of equal size");
  if (options.grids < groups)
    throw ValueError("--grid-groups " + std::to_string(groups) + ": more groups than the " +
                     std::to_string(options.grids) + " grids");
  GridGroup group;
  group.index = rank % groups;
  const std::int64_t base = options.grids / groups, extra = options.grids % groups;
  group.grids = base + (group.index < extra ? 1 : 0);
  group.first_grid = group.index * base + std::min<std::int64_t>(group.index, extra);
  if (groups > 1) MPI_Comm_split(MPI_COMM_WORLD, group.index, rank, &group.comm);
  return group;
}

// Batch steps of one apply over `grids` grids (the schedule's batches, the last clipped).
std::int64_t batch_steps(const Config& config, std::int64_t grids) {
  const BatchShape shape{config.batch, config.slope, slope_kind_from_name(config.slope_kind)};
  std::int64_t steps = 0;
  for (std::int64_t done = 0; done < grids; ++steps) done += shape.size(static_cast<int>(steps));
  return steps;
}

std::string now_utc() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S+00:00", std::gmtime(&now));
  return text;
}

template <class T>
Json or_null(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json::Array numbers(const auto& values) {
  Json::Array array;
  for (const auto v : values) array.emplace_back(static_cast<std::int64_t>(v));
  return array;
}

Json environment(int ranks) {
  char host[MPI_MAX_PROCESSOR_NAME];
  int length = 0, major = 0, minor = 0, level = 0;
  MPI_Get_processor_name(host, &length);
  MPI_Get_version(&major, &minor);
  MPI_Query_thread(&level);
  cpu_set_t cpus;
  const int cores = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  std::string library = mpi_library_version();
  library.erase(library.find_last_not_of(" \n\t") + 1);
  const char* none = "not used (hybridfd-bench: C++ alone)";
  return Json::Object{
      {"host", std::string(host, static_cast<std::size_t>(length))},
      {"ranks", ranks},
      {"cores", cores},
      {"mpi_library", library},
      {"mpi_library_core", library},
      {"mpi_standard", std::to_string(major) + "." + std::to_string(minor)},
      {"thread_level", std::string(thread_level_name(level))},
      {"build_flags", build_flags()},
      {"versions", Json::Object{{"hybridfd", version()}, {"python", none}, {"numpy", none}, {"mpi4py", none}}},
      {"git_revision", nullptr},
  };
}

Json config_json(const Config& config) {
  return Json::Object{
      {"approach", config.approach},
      {"model", config.model},
      {"threads", config.threads},
      {"master_share", config.master_share},
      {"thread_level", config.thread_level},
      {"mpi_thread_level", config.mpi_thread_level},
      {"placement", config.placement},
      {"schedule", config.schedule},
      {"transport", config.transport},
      {"batch", config.batch},
      {"slope", config.slope},
      {"slope_kind", config.slope_kind},
      {"progress", config.progress},
      {"mapping", nullptr},
  };
}

// Columns as `hybridfd run` shows them, plus the checksum.
Json columns() {
  Json::Array list;
  auto column = [&](const char* key, const char* title, const char* format = nullptr) {
    Json::Object c{{"key", key}, {"title", title}};
    if (format != nullptr) c.emplace_back("format", format);
    list.emplace_back(std::move(c));
  };
  column("approach", "approach");
  column("model", "model");
  column("threads", "threads per rank");
  column("schedule", "schedule");
  column("transport", "transport");
  column("batch", "b");
  column("slope", "slope");
  column("process_grid", "process grid");
  column("median_ms", "median ms", ".3f");
  column("ms_per_grid", "ms/grid", ".3f");
  column("mpoints_per_s", "Mpoints/s", ".1f");
  column("gb_per_s", "GB/s", ".2f");
  column("max_relative_error", "max rel. error", ".1e");
  column("bit_identical_to_reference", "== reference");
  column("checksum", "checksum", ".17g");
  return list;
}

int run(const BenchOptions& options, int rank, int size) {
  const Domain domain{options.shape, options.periodic, scalar_type_from_name(options.dtype)};
  const GridGroup group = grid_group(options, rank, size);
  auto decomposition = std::make_shared<Decomposition>(group.comm, domain, options.grid);
  const Stencil stencil = Stencil::laplace(options.radius, {options.spacing, options.spacing, options.spacing});
  const bool modelled = options.compute == Compute::modelled;
  if (modelled) use_modelled_compute(options.node_cores);
  if (options.halo_copy_per_lane > 0) charge_halo_copies(options.halo_copy_per_lane);
  Operator op(decomposition, stencil, options.op);
  // The thread team's synchronisation (modelled threads at scale), charged after each apply.
  // (Counting the batch steps walks them: only when they are charged.)
  const double sync_seconds =
      options.sync_per_apply +
      (options.sync_per_batch > 0 ? options.sync_per_batch * static_cast<double>(batch_steps(op.config(), group.grids))
                                  : 0.0);
  auto apply = [&](const ArrayRef& in, const ArrayRef& out) {
    op.apply(in, out);
    charge_seconds(sync_seconds);
  };

  const MPI_Comm comm = MPI_COMM_WORLD;  // timing and checks over all groups
  const Box box = decomposition->local_box();
  const std::int64_t lanes = lanes_per_point(domain.dtype);
  const Index3& extent = box.extent;
  const std::int64_t local_lanes = group.grids * extent[0] * extent[1] * extent[2] * lanes;
  // Named before allocating (overcommitted memory would fail only when touched, in the
  // middle of the run), on every rank alike.
  agree_on_problems(comm, find_problem([&] {
                      const double memory = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
                      const double bytes = 2.0 * 8.0 * static_cast<double>(group.grids) *
                                           static_cast<double>(extent[0]) * static_cast<double>(extent[1]) *
                                           static_cast<double>(extent[2]) * static_cast<double>(lanes);
                      if (!modelled && memory > 0 && bytes > memory)
                        throw ValueError("--grids " + std::to_string(options.grids) + " need " +
                                         std::to_string(bytes / 1e9) +
                                         " GB on this rank (input and output), more than its " +
                                         std::to_string(memory / 1e9) + " GB of memory");
                    }));
  GridStorage grids(local_lanes, 2, modelled);
  double* const in = grids.data(0);
  double* const out = grids.data(1);
  if (!modelled)
    for_each_lane(box, group.grids, lanes, [&](std::int64_t g, const Index3& p, std::int64_t lane, std::int64_t i) {
      in[i] = field_value(group.first_grid + g, p[0], p[1], p[2], lane);
    });
  const std::int64_t item = 8 * lanes;
  ArrayRef in_ref{in, options.dtype, 4, {group.grids, extent[0], extent[1], extent[2]}, {}, true};
  in_ref.strides = {item * extent[0] * extent[1] * extent[2], item * extent[1] * extent[2], item * extent[2], item};
  ArrayRef out_ref = in_ref;
  out_ref.data = out;

  apply(in_ref, out_ref);  // warm-up, and the result checked below
  std::optional<double> result_checksum, reference_checksum, max_error;
  std::optional<bool> identical;
  const std::int64_t points = options.grids * domain.shape[0] * domain.shape[1] * domain.shape[2];
  const bool check = !modelled && (options.check == Check::on ||
                                   (options.check == Check::automatic && points / size <= check_limit_points));
  // Each group's checksum in its rank order, then the groups' in group order (world ranks
  // 0 .. groups-1 are the groups' first ranks); one group: the plain checksum.
  auto total_checksum = [&](const double* values) {
    const double in_group = checksum(group.comm, box, group.grids, group.first_grid, lanes, values);
    if (options.grid_groups == 1) return in_group;
    return sum_in_rank_order(comm, rank < options.grid_groups ? in_group : 0.0);
  };
  if (!modelled) result_checksum = total_checksum(out);
  if (check) {
    std::vector<double> expected(static_cast<std::size_t>(local_lanes));
    for_each_lane(box, group.grids, lanes, [&](std::int64_t g, const Index3& p, std::int64_t lane, std::int64_t i) {
      expected[static_cast<std::size_t>(i)] = reference_value(stencil, domain, group.first_grid + g, p, lane);
    });
    double worst[2] = {0.0, 0.0};  // largest |difference| and largest |expected|
    std::int64_t different = 0;
    for (std::int64_t i = 0; i < local_lanes; ++i) {
      const double e = expected[static_cast<std::size_t>(i)];
      worst[0] = std::max(worst[0], std::abs(out[i] - e));
      worst[1] = std::max(worst[1], std::abs(e));
      different += out[i] != e;
    }
    MPI_Allreduce(MPI_IN_PLACE, worst, 2, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(MPI_IN_PLACE, &different, 1, MPI_INT64_T, MPI_SUM, comm);
    max_error = worst[0] / (worst[1] > 0 ? worst[1] : 1.0);
    identical = different == 0;
    reference_checksum = total_checksum(expected.data());
  }

  std::vector<double> samples;
  for (int i = 0; i < options.repeats; ++i) {
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    apply(in_ref, out_ref);
    double seconds = MPI_Wtime() - start;
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
    samples.push_back(seconds);
  }
  const bool failed = identical == false;
  if (options.grid_groups > 1) {  // the decomposition keeps its own Cartesian communicator
    MPI_Comm split = group.comm;
    MPI_Comm_free(&split);
  }
  if (rank != 0) return failed ? 1 : 0;

  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  Json::Array samples_ms;
  for (const double s : samples) samples_ms.emplace_back(1e3 * s);
  const Config& config = op.config();
  const Json::Object row{
      {"approach", config.approach},
      {"model", config.model},
      {"threads", config.threads},
      {"schedule", config.schedule},
      {"transport", config.transport},
      {"batch", config.batch},
      {"slope", config.slope},
      {"ranks", size},
      {"process_grid", numbers(decomposition->grid())},
      {"grids", options.grids},
      {"shape", numbers(domain.shape)},
      {"dtype", options.dtype},
      {"median_ms", 1e3 * median},
      {"min_ms", 1e3 * sorted.front()},
      {"max_ms", 1e3 * sorted.back()},
      {"ms_per_grid", 1e3 * median / static_cast<double>(options.grids)},
      {"mpoints_per_s", static_cast<double>(points) / median / 1e6},
      // One read of the input and one write of the output per point, as `hybridfd run`.
      {"gb_per_s", 2.0 * static_cast<double>(points * item) / median / 1e9},
      {"max_relative_error", or_null(max_error)},
      {"bit_identical_to_reference", or_null(identical)},
      {"samples_ms", samples_ms},
      {"config", config_json(config)},
      {"checksum", or_null(result_checksum)},
      {"reference_checksum", or_null(reference_checksum)},
      {"compute", modelled ? "modelled" : "real"},
      {"simulated", simulated()},
      {"driver", "hybridfd-bench"},
  };
  Json::Object parameters{
      {"grids", options.grids},
      {"shape", numbers(domain.shape)},
      {"dtype", options.dtype},
      {"periodic", Json::Array{domain.periodic[0], domain.periodic[1], domain.periodic[2]}},
      {"radius", options.radius},
      {"spacing", options.spacing},
      {"grid", options.grid ? Json(numbers(*options.grid)) : Json(nullptr)},
      {"repeats", options.repeats},
      {"check", options.check == Check::on    ? "on"
                : options.check == Check::off ? "off"
                                              : "auto"},
      {"compute", modelled ? "modelled" : "real"},
      {"grid_groups", options.grid_groups},
      {"node_cores", options.node_cores},
      {"sync_per_batch_s", options.sync_per_batch},
      {"sync_per_apply_s", options.sync_per_apply},
      {"halo_copy_per_lane_s", options.halo_copy_per_lane},
  };
  Json::Array argv{"hybridfd-bench"};
  for (const auto& a : options.argv) argv.emplace_back(a);
  const std::string title = "hybridfd-bench: " + std::to_string(options.grids) + " grids of " +
                            std::to_string(domain.shape[0]) + "x" + std::to_string(domain.shape[1]) + "x" +
                            std::to_string(domain.shape[2]) + " " + options.dtype + ", " + std::to_string(size) +
                            " ranks, median of " + std::to_string(options.repeats) +
                            (simulated() ? " (simulated by SimGrid SMPI)" : "");
  Json::Array notes;
  if (simulated())
    notes.emplace_back(std::string("times are simulated (SimGrid SMPI); compute ") +
                       (modelled ? "charged from the platform's core speed, data untouched" : "really done"));
  const Json record = Json::Object{
      {"format", "hybridfd-result/1"},
      {"command", "run"},
      {"name", "run"},
      {"title", title},
      {"created", now_utc()},
      {"argv", argv},
      {"environment", environment(size)},
      {"parameters", parameters},
      {"config", config_json(config)},
      {"columns", columns()},
      {"rows", Json::Array{row}},
      {"plot", nullptr},
      {"notes", notes},
  };
  const std::string text = record.dump();
  std::printf("%s\n", text.c_str());
  if (!options.output.empty()) {
    std::ofstream file(options.output);
    if (!(file << text << '\n')) {
      std::fprintf(stderr, "hybridfd-bench: error: cannot write --output %s\n", options.output.c_str());
      return 2;
    }
  }
  if (failed) std::fprintf(stderr, "hybridfd-bench: ERROR: the result differs from the reference\n");
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace hybridfd::tools

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 0;
  try {
    // Every rank parses the same argv, so a bad option is found on every rank alike.
    const auto options = hybridfd::tools::parse_options(argc - 1, argv + 1, rank == 0);
    if (options) status = hybridfd::tools::run(*options, rank, size);
  } catch (const std::invalid_argument& error) {  // ValueError, TypeError: alike on every rank
    if (rank == 0) std::fprintf(stderr, "hybridfd-bench: error: %s\n", error.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}
