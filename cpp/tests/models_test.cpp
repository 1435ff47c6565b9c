// Every model x schedule x transport x threads (1..3) x batch gives results bit-identical
// to flat-original, from C++ alone, for float64 and complex128 on an uneven, partly
// periodic domain; and complex128 with Bloch phases, each model x schedule x transport at
// batch 3 (received faces phased in place, and phased copies of the faces whose neighbour
// is this rank itself, in buffers that are not zeroed). Run under mpiexec at any rank
// count; also the program the sanitizer builds (make tsan, make sanitize) run. Prints
// "ok" and exits 0, or names the first mismatch and exits 1.
#include <mpi.h>

#include <algorithm>
#include <complex>
#include <cstdio>
#include <cstring>
#include <hybridfd/hybridfd.hpp>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

hybridfd::ArrayRef view(std::vector<double>& data, std::string_view dtype, std::int64_t grids,
                        const hybridfd::Index3& extent) {
  const std::int64_t item = dtype == "complex128" ? 16 : 8;
  hybridfd::ArrayRef ref{data.data(), dtype, 4, {grids, extent[0], extent[1], extent[2]}, {}, true};
  ref.strides = {item * extent[0] * extent[1] * extent[2], item * extent[1] * extent[2], item * extent[2], item};
  return ref;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int max_threads = argc > 1 ? std::atoi(argv[1]) : 3;
  const std::int64_t grids = 5;
  int failures = 0, checked = 0;
  // Bloch phases of a k-point on the periodic axes x and z (1 on the non-periodic y).
  const hybridfd::BlochPhases phases{
      {{std::polar(1.0, -0.7), std::polar(1.0, 0.7)}, {1.0, 1.0}, {std::polar(1.0, 1.9), std::polar(1.0, -1.9)}}};
  for (const auto dtype : {hybridfd::ScalarType::float64, hybridfd::ScalarType::complex128}) {
    const hybridfd::Domain domain{{21, 11, 10}, {true, false, true}, dtype};
    auto decomposition = std::make_shared<hybridfd::Decomposition>(MPI_COMM_WORLD, domain);
    const auto stencil = hybridfd::Stencil::laplace(2, {0.3, 0.4, 0.5});
    const auto extent = decomposition->local_box().extent;
    const int lanes = hybridfd::lanes_per_point(dtype);
    const auto name = hybridfd::scalar_type_name(dtype);
    std::vector<double> in(static_cast<std::size_t>(grids * extent[0] * extent[1] * extent[2] * lanes));
    std::mt19937_64 random(static_cast<unsigned>(rank));
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    for (double& value : in) value = uniform(random);
    std::vector<double> original(in.size()), out(in.size());
    hybridfd::Operator(decomposition, stencil, hybridfd::Options{})  // flat-original
        .apply(view(in, name, grids, extent), view(original, name, grids, extent));
    for (const std::string& model : hybridfd::model_names())
      for (int threads = 1; threads <= (model == "flat" ? 1 : max_threads); ++threads)
        for (const std::string& schedule : hybridfd::schedule_names())
          for (const std::string& transport : hybridfd::transport_names())
            for (const int batch : {1, 3}) {
              const auto support = hybridfd::transport_support(transport);
              if (std::find(support.models.begin(), support.models.end(), model) == support.models.end()) continue;
              hybridfd::Options options;
              options.approach = "flat-optimized";
              options.model = model;
              options.threads = threads;
              options.schedule = schedule;
              options.transport = transport;
              options.batch = batch;
              options.slope = batch > 1 ? 1 : 0;
              hybridfd::Operator op(decomposition, stencil, options);
              std::fill(out.begin(), out.end(), 0.0);
              op.apply(view(in, name, grids, extent), view(out, name, grids, extent));
              ++checked;
              if (std::memcmp(out.data(), original.data(), out.size() * sizeof(double)) != 0 && failures++ == 0)
                std::printf("rank %d: MISMATCH %s model %s threads %d schedule %s transport %s batch %d\n", rank,
                            std::string(name).c_str(), model.c_str(), threads, schedule.c_str(), transport.c_str(),
                            batch);
            }
    if (dtype != hybridfd::ScalarType::complex128) continue;
    const std::vector<double> without_phases = original;
    hybridfd::Operator(decomposition, stencil, hybridfd::Options{})
        .apply(view(in, name, grids, extent), view(original, name, grids, extent), &phases);
    // Every rank's box has points within reach of the periodic x or z boundary.
    if (original == without_phases && failures++ == 0) std::printf("rank %d: the phases changed nothing\n", rank);
    for (const std::string& model : hybridfd::model_names())
      for (const std::string& schedule : hybridfd::schedule_names())
        for (const std::string& transport : hybridfd::transport_names()) {
          const auto support = hybridfd::transport_support(transport);
          if (std::find(support.models.begin(), support.models.end(), model) == support.models.end()) continue;
          hybridfd::Options options;
          options.approach = "flat-optimized";
          options.model = model;
          options.threads = model == "flat" ? 1 : std::min(2, max_threads);
          options.schedule = schedule;
          options.transport = transport;
          options.batch = 3;
          hybridfd::Operator op(decomposition, stencil, options);
          std::fill(out.begin(), out.end(), 0.0);
          op.apply(view(in, name, grids, extent), view(out, name, grids, extent), &phases);
          ++checked;
          if (std::memcmp(out.data(), original.data(), out.size() * sizeof(double)) != 0 && failures++ == 0)
            std::printf("rank %d: MISMATCH complex128 with Bloch phases model %s schedule %s transport %s\n", rank,
                        model.c_str(), schedule.c_str(), transport.c_str());
        }
  }
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf(failures ? "%d configurations x ranks differ\n" : "ok (%d configurations)\n",
                failures ? failures : checked);
  MPI_Finalize();
  return failures ? 1 : 0;
}
