// Halo from C++ alone: exchange, split phase and pipeline fill every ghost layer of padded
// grids holding a global index pattern, each ghost the value of the point it stands for
// (periodic wrap, zeros beyond the non-periodic axis), for a general stencil's halo read
// from a Stencil too. Run under mpiexec on any number of ranks. Prints "ok" and exits 0,
// or names the failed check and exits 1.
#include "hybridfd/halo.hpp"

#include <mpi.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "hybridfd/errors.hpp"

namespace {

using hybridfd::Index3;
using hybridfd::Offset;

void check(bool condition, const std::string& what) {
  if (condition) return;
  std::printf("FAILED: %s\n", what.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

constexpr Index3 shape{10, 9, 8};
constexpr std::array<bool, 3> periodic{true, false, true};

// The value grid g holds at global point (x, y, z) (any integers: periodic axes wrap),
// 0 beyond a non-periodic end.
double value(std::int64_t g, std::int64_t x, std::int64_t y, std::int64_t z) {
  const std::int64_t point[3] = {x, y, z};
  std::int64_t wrapped[3];
  for (int axis = 0; axis < 3; ++axis) {
    const std::int64_t n = shape[axis];
    if (point[axis] < 0 || point[axis] >= n) {
      if (!periodic[axis]) return 0.0;
      wrapped[axis] = ((point[axis] % n) + n) % n;
    } else {
      wrapped[axis] = point[axis];
    }
  }
  return 1.0 + g * 1000.0 + static_cast<double>((wrapped[0] * shape[1] + wrapped[1]) * shape[2] + wrapped[2]);
}

struct Padded {
  std::vector<double> data;
  hybridfd::ArrayRef ref;
};

Padded filled_interior(const hybridfd::Halo& halo, std::int64_t grids) {
  const Index3 p = halo.plan().padded_extent();
  const Offset w = halo.plan().widths();
  const Index3 n = halo.plan().extent();
  const Index3 offset = halo.decomposition().local_box().offset;
  Padded result;
  result.data.assign(static_cast<std::size_t>(grids * p[0] * p[1] * p[2]), -7.0);
  for (std::int64_t g = 0; g < grids; ++g)
    for (std::int64_t x = 0; x < n[0]; ++x)
      for (std::int64_t y = 0; y < n[1]; ++y)
        for (std::int64_t z = 0; z < n[2]; ++z)
          result.data[static_cast<std::size_t>(((g * p[0] + x + w[0]) * p[1] + y + w[1]) * p[2] + z + w[2])] =
              value(g, offset[0] + x, offset[1] + y, offset[2] + z);
  result.ref.data = result.data.data();
  result.ref.dtype = "float64";
  result.ref.ndim = 4;
  result.ref.shape = {grids, p[0], p[1], p[2]};
  result.ref.strides = {p[0] * p[1] * p[2] * 8, p[1] * p[2] * 8, p[2] * 8, 8};
  return result;
}

// Every point of every padded grid, ghosts included, holds the value of the point it
// stands for.
void check_filled(const hybridfd::Halo& halo, const Padded& padded, std::int64_t grids, const std::string& what) {
  const Index3 p = halo.plan().padded_extent();
  const Offset w = halo.plan().widths();
  const Index3 offset = halo.decomposition().local_box().offset;
  for (std::int64_t g = 0; g < grids; ++g)
    for (std::int64_t x = 0; x < p[0]; ++x)
      for (std::int64_t y = 0; y < p[1]; ++y)
        for (std::int64_t z = 0; z < p[2]; ++z) {
          const double got = padded.data[static_cast<std::size_t>(((g * p[0] + x) * p[1] + y) * p[2] + z)];
          const double want = value(g, offset[0] + x - w[0], offset[1] + y - w[1], offset[2] + z - w[2]);
          check(got == want, what + ": grid " + std::to_string(g) + " padded point (" + std::to_string(x) + ", " +
                                 std::to_string(y) + ", " + std::to_string(z) + ") is " + std::to_string(got) +
                                 ", expected " + std::to_string(want));
        }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  {
    const hybridfd::Domain domain{shape, periodic, hybridfd::ScalarType::float64};
    auto decomposition = std::make_shared<hybridfd::Decomposition>(MPI_COMM_WORLD, domain);
    constexpr std::int64_t grids = 5;
    for (const std::string approach : {"flat-original", "flat-optimized"}) {
      hybridfd::Options options;
      options.approach = approach;
      hybridfd::Halo halo(decomposition, Offset{2, 1, 2}, true, options);
      check(halo.plan().faces().size() == 26, "corners: 26 directions");
      Padded a = filled_interior(halo, grids);
      halo.exchange(a.ref);
      check_filled(halo, a, grids, approach + " exchange");
      Padded b = filled_interior(halo, grids);
      halo.start(b.ref);
      check(halo.started(), "started");
      halo.finish();
      check_filled(halo, b, grids, approach + " start/finish");
      Padded c = filled_interior(halo, grids);
      std::int64_t seen = 0;
      halo.pipeline(c.ref, [&](std::int64_t first, std::int64_t last) {
        check(first == seen && last > first, "batches in order");
        seen = last;
      });
      check(seen == grids, "every grid handed to compute");
      check_filled(halo, c, grids, approach + " pipeline");
      try {
        halo.finish();
        check(false, "finish without a start throws");
      } catch (const hybridfd::ValueError& error) {
        check(std::string(error.what()).find("finish without a start") != std::string::npos, error.what());
      }
    }
    // A stencil along the xy diagonals reads the faces and the xy edges only.
    const std::vector<Offset> offsets{{0, 0, 0}, {1, 1, 0}, {-1, -1, 0}, {1, -1, 0}, {-1, 1, 0}, {0, 0, 1}};
    const std::vector<double> weights{-4.0, 1.0, 1.0, 1.0, 1.0, 0.5};
    hybridfd::Halo diagonal(decomposition, hybridfd::Stencil::from_offsets(offsets, weights));
    check(diagonal.plan().faces().size() == 10, "faces and four xy edges");
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("ok, %d ranks\n", size);
  MPI_Finalize();
  return 0;
}
