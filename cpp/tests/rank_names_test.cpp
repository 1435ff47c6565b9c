// Errors name the ranks of the communicator the caller gave: a Decomposition whose Layout
// renumbers the ranks (and an Operator on it) names each rank by its rank in that
// communicator, not in the Cartesian one; agree_on_problems names ranks by the names it is
// given. Run under mpiexec on 3 ranks. Prints "ok" and exits 0, or names the failed check
// and exits 1.
#include <mpi.h>

#include <cstdio>
#include <hybridfd/hybridfd.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void check(bool condition, const std::string& what) {
  if (condition) return;
  std::printf("FAILED: %s\n", what.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// The message of what `call` throws (every rank must throw), or "(no error)".
template <class Call>
std::string error_of(Call&& call) {
  try {
    call();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "(no error)";
}

void check_message(const std::string& message, const std::string& expected) {
  check(message == expected, "expected \"" + expected + "\", got \"" + message + "\"");
}

void check_prefix(const std::string& message, const std::string& prefix) {
  check(message.rfind(prefix, 0) == 0, "expected a message starting \"" + prefix + "\", got \"" + message + "\"");
}

hybridfd::ArrayRef view(std::vector<double>& data, std::int64_t grids, const hybridfd::Index3& extent) {
  hybridfd::ArrayRef ref{data.data(), "float64", 4, {grids, extent[0], extent[1], extent[2]}, {}, true};
  ref.strides = {8 * extent[0] * extent[1] * extent[2], 8 * extent[1] * extent[2], 8 * extent[2], 8};
  return ref;
}

// agree_on_problems with names: listed by name, in ascending order of names.
void check_named_agreement(int world_rank) {
  const std::vector<int> names{2, 0, 1};  // world rank r is named names[r]
  const std::optional<hybridfd::Problem> problem =
      world_rank < 2 ? std::optional(hybridfd::Problem{hybridfd::ProblemKind::value, "bad"}) : std::nullopt;
  check_message(error_of([&] { hybridfd::agree_on_problems(MPI_COMM_WORLD, problem, 0, "count", names); }),
                "ranks 0, 2: bad");
  check_message(
      error_of([&] { hybridfd::agree_on_problems(MPI_COMM_WORLD, std::nullopt, world_rank, "count", names); }),
      "the count must be the same on every rank, got 1 on rank 0, 2 on rank 1, 0 on rank 2");
  check_prefix(
      error_of([&] { hybridfd::agree_on_problems(MPI_COMM_WORLD, std::nullopt, 0, "count", {names.data(), 2}); }),
      "agreement given 2 rank names for a communicator of 3 ranks");
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int world_rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  check(size == 3, "run on 3 ranks");
  check_named_agreement(world_rank);

  // The caller's communicator: the world's ranks in reverse, so that its rank numbers are
  // neither the world's nor the Cartesian ones.
  MPI_Comm caller = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - world_rank, &caller);
  int me = 0;
  MPI_Comm_rank(caller, &me);
  {
    // Rank r of the caller's communicator holds box (r + 1) % 3 along x.
    hybridfd::Layout layout{{std::vector<std::int64_t>{0, 4, 8, 12}, {0, 4}, {0, 4}},
                            {{1, 0, 0}, {2, 0, 0}, {0, 0, 0}}};
    const hybridfd::Domain domain{{12, 4, 4}, {true, true, true}, hybridfd::ScalarType::float64};
    auto dec = std::make_shared<hybridfd::Decomposition>(caller, domain, layout);
    check(dec->rank() == (me + 1) % 3, "the layout renumbers the ranks");
    check(dec->caller_ranks() == std::vector<int>{2, 0, 1}, "caller_ranks maps each Cartesian rank to the caller's");
    const hybridfd::Decomposition plain(caller, domain);
    check(plain.caller_ranks() == std::vector<int>{0, 1, 2}, "without a renumbering the ranks keep their numbers");

    hybridfd::Operator op(dec, hybridfd::Stencil::laplace(1, {1.0, 1.0, 1.0}));
    const auto extent = dec->local_box().extent;
    std::vector<double> in(2 * 4 * 4 * 4), out(in.size());
    const hybridfd::Index3 wrong{5, 4, 4};
    // Caller rank 1 is Cartesian rank 2: every message names it 1.
    check_prefix(error_of([&] { op.apply(view(in, 1, me == 1 ? wrong : extent), view(out, 1, extent)); }),
                 "rank 1: input array has shape (1, 5, 4, 4)");
    const std::int64_t grids = me == 1 ? 2 : 1;
    check_message(error_of([&] { op.apply(view(in, grids, extent), view(out, grids, extent)); }),
                  "the number of grids G must be the same on every rank, got 1 on rank 0, 2 on rank 1, 1 on rank 2");
    check_message(error_of([&] { op.start_trace(me == 1 ? 8 : 4); }),
                  "the events per thread must be the same on every rank, got 4 on rank 0, 8 on rank 1, 4 on rank 2");
    // The coefficients are part of the setting: they differ on caller rank 1.
    const double spacing = me == 1 ? 2.0 : 1.0;
    const auto stencil = hybridfd::Stencil::laplace(1, {spacing, spacing, spacing});
    const std::string setting = error_of([&] { hybridfd::Operator(dec, stencil); });
    check_prefix(setting, "the operator setting must be the same on every rank, got ranks 0, 2: ");
    check(setting.find("; rank 1: ") != std::string::npos, "the odd setting is caller rank 1's: " + setting);
  }
  MPI_Comm_free(&caller);
  if (world_rank == 0) std::printf("ok\n");
  MPI_Finalize();
  return 0;
}
