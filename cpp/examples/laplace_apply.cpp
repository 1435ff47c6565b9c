// Using the hybridfd core from C++ alone (no Python): apply the 13-point Laplacian to a
// batch of distributed grids with flat-original and check every point against the
// stencil evaluated directly on the global function. Exit code 0 and "ok" on success.
//
//   mpiexec -n 4 ./laplace_apply [Nx Ny Nz [grids]]
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <hybridfd/hybridfd.hpp>
#include <memory>
#include <vector>

namespace {

// A deterministic, non-separable test function of the global point and grid index.
double value(std::int64_t g, std::int64_t x, std::int64_t y, std::int64_t z) {
  return std::sin(0.3 * x + 0.1 * g) * std::cos(0.2 * y - 0.05 * z) +
         0.01 * static_cast<double>((x * 7 + y * 3 + z) % 11);
}

std::int64_t wrap(std::int64_t i, std::int64_t n) { return ((i % n) + n) % n; }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const hybridfd::Index3 shape{argc > 3 ? std::atoll(argv[1]) : 20, argc > 3 ? std::atoll(argv[2]) : 17,
                               argc > 3 ? std::atoll(argv[3]) : 19};
  const std::int64_t grids = argc > 4 ? std::atoll(argv[4]) : 3;
  int status = 0;
  {
    const hybridfd::Domain domain{shape, {true, true, true}, hybridfd::ScalarType::float64};
    auto decomposition = std::make_shared<hybridfd::Decomposition>(MPI_COMM_WORLD, domain);
    const auto stencil = hybridfd::Stencil::laplace(2, {0.2, 0.2, 0.2});
    hybridfd::Operator op(decomposition, stencil, {.approach = "flat-original"});

    const hybridfd::Box box = decomposition->local_box();
    const auto& [offset, extent] = box;
    std::vector<double> in(static_cast<std::size_t>(grids * extent[0] * extent[1] * extent[2]));
    std::vector<double> out(in.size());
    auto index = [&](std::int64_t g, std::int64_t x, std::int64_t y, std::int64_t z) {
      return static_cast<std::size_t>(((g * extent[0] + x) * extent[1] + y) * extent[2] + z);
    };
    for (std::int64_t g = 0; g < grids; ++g)
      for (std::int64_t x = 0; x < extent[0]; ++x)
        for (std::int64_t y = 0; y < extent[1]; ++y)
          for (std::int64_t z = 0; z < extent[2]; ++z)
            in[index(g, x, y, z)] = value(g, offset[0] + x, offset[1] + y, offset[2] + z);

    hybridfd::ArrayRef in_ref{in.data(), "float64", 4, {grids, extent[0], extent[1], extent[2]}, {}, true};
    in_ref.strides = {8 * extent[0] * extent[1] * extent[2], 8 * extent[1] * extent[2], 8 * extent[2], 8};
    hybridfd::ArrayRef out_ref = in_ref;
    out_ref.data = out.data();
    op.apply(in_ref, out_ref);

    // Direct evaluation in the documented summation order: bit-identical expected.
    double worst = 0.0;
    for (std::int64_t g = 0; g < grids; ++g)
      for (std::int64_t x = 0; x < extent[0]; ++x)
        for (std::int64_t y = 0; y < extent[1]; ++y)
          for (std::int64_t z = 0; z < extent[2]; ++z) {
            const hybridfd::Index3 p{offset[0] + x, offset[1] + y, offset[2] + z};
            double sum = stencil.centre * value(g, p[0], p[1], p[2]);
            for (int axis = 0; axis < 3; ++axis)
              for (int d = 1; d <= stencil.radius; ++d) {
                hybridfd::Index3 lower = p, upper = p;
                lower[axis] = wrap(p[axis] - d, shape[axis]);
                upper[axis] = wrap(p[axis] + d, shape[axis]);
                const double below = value(g, lower[0], lower[1], lower[2]);
                const double above = value(g, upper[0], upper[1], upper[2]);
                if (stencil.symmetric()) {  // the Laplacian: the paired form
                  sum += stencil.minus[axis][d - 1] * (below + above);
                } else {
                  sum += stencil.minus[axis][d - 1] * below;
                  sum += stencil.plus[axis][d - 1] * above;
                }
              }
            worst = std::max(worst, std::abs(out[index(g, x, y, z)] - sum));
          }
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const auto grid = decomposition->grid();
    if (rank == 0)
      std::printf("laplace_apply: %d ranks, process grid (%d, %d, %d), max |difference| %.3g: %s\n",
                  decomposition->size(), grid[0], grid[1], grid[2], worst, worst == 0.0 ? "ok" : "MISMATCH");
    status = worst == 0.0 ? 0 : 1;
  }
  MPI_Finalize();
  return status;
}
