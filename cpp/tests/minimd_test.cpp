// The MiniMD mini-app from C++ alone, through the installed hybridfd::minimd target: an
// LJ melt of 5 x 4 x 4 FCC cells (320 atoms) over 30 steps with every particle exchange
// conserves its atoms and ends bit-identical across the exchanges and to a run on this
// rank alone. Run under mpiexec on 1, 2, 4 or 8 ranks (the box splits at most in two
// per axis: every region at least cutoff + skin thick). Prints "ok (...)" and exits 0,
// or names the failed check and exits 1.
#include "hybridfd/minimd/minimd.hpp"

#include <mpi.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "hybridfd/errors.hpp"

namespace {

using hybridfd::minimd::GatheredAtoms;
using hybridfd::minimd::LennardJones;
using hybridfd::minimd::LennardJonesOptions;

void check(bool condition, const std::string& what) {
  if (condition) return;
  std::printf("FAILED: %s\n", what.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

struct Melt {
  std::array<double, 3> box{};
  std::vector<double> positions, velocities;
  std::vector<std::int64_t> tags;
};

// An FCC lattice at the melt's density 0.8442, velocities from a fixed integer sequence
// with the total momentum removed: the same on every rank.
Melt fcc_melt(const std::array<int, 3>& cells) {
  constexpr double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  const double lattice = std::cbrt(4.0 / 0.8442);
  Melt melt;
  for (int axis = 0; axis < 3; ++axis) melt.box[axis] = cells[axis] * lattice;
  std::uint64_t state = 87287;
  for (int x = 0; x < cells[0]; ++x)
    for (int y = 0; y < cells[1]; ++y)
      for (int z = 0; z < cells[2]; ++z)
        for (const auto& offset : basis) {
          const int corner[3] = {x, y, z};
          for (int axis = 0; axis < 3; ++axis) {
            melt.positions.push_back((corner[axis] + offset[axis]) * lattice);
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            melt.velocities.push_back(static_cast<double>(state >> 11) / 9007199254740992.0 - 0.5);
          }
          melt.tags.push_back(static_cast<std::int64_t>(melt.tags.size()) + 1);
        }
  const auto atoms = static_cast<double>(melt.tags.size());
  for (int axis = 0; axis < 3; ++axis) {
    double mean = 0;
    for (std::size_t atom = 0; atom < melt.tags.size(); ++atom) mean += melt.velocities[3 * atom + axis];
    for (std::size_t atom = 0; atom < melt.tags.size(); ++atom) melt.velocities[3 * atom + axis] -= mean / atoms;
  }
  return melt;
}

GatheredAtoms run(MPI_Comm comm, const Melt& melt, const std::string& transport, std::int64_t steps) {
  LennardJonesOptions options;
  options.transport = transport;
  LennardJones md(comm, melt.box, melt.positions, melt.velocities, melt.tags, options);
  const auto thermo = md.run(steps, 10, true);
  check(thermo.size() == static_cast<std::size_t>(steps / 10 + 1), transport + ": one thermo record per 10 steps");
  for (const auto& record : thermo)
    check(std::isfinite(record.total_energy) && std::isfinite(record.pressure), transport + ": finite thermo");
  for (const auto& census : md.census())
    check(census.atoms == static_cast<std::int64_t>(melt.tags.size()), transport + ": every atom, each step");
  return md.gather();
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Melt melt = fcc_melt({5, 4, 4});
  const std::int64_t steps = 30;
  const GatheredAtoms alone = run(MPI_COMM_SELF, melt, "p2p", steps);
  check(alone.tags == melt.tags, "a run on one rank keeps every tag");
  const auto transports = hybridfd::minimd::particle_transport_names();
  check(!transports.empty(), "the app registers particle exchanges");
  for (const std::string& transport : transports) {
    const GatheredAtoms atoms = run(MPI_COMM_WORLD, melt, transport, steps);
    check(atoms.tags == alone.tags, transport + ": the same atoms as one rank");
    check(atoms.positions == alone.positions && atoms.velocities == alone.velocities,
          transport + ": positions and velocities bit-identical to one rank");
  }
  bool refused = false;
  try {
    hybridfd::minimd::check_particle_transport("persistent");
  } catch (const hybridfd::ValueError&) {
    refused = true;
  }
  check(refused, "a grid-only transport is refused for particles");
  if (rank == 0) std::printf("ok (%d ranks, %zu exchanges)\n", size, transports.size());
  MPI_Finalize();
  return 0;
}
