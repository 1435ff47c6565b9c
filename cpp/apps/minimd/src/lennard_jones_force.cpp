// The Lennard-Jones force kernel (MiniMD's force_lj.cpp compute with a full list, in
// LAMMPS pair lj/cut's arithmetic: forcelj = r^-6 (48 r^-6 - 24), fpair = forcelj r^-2).
// Each atom's pairs are taken in its list's order (sorted by neighbour tag and image) into
// four lanes, pair k into lane k % 4, so the sum is the same whatever the decomposition.
#include "hybridfd/minimd/lennard_jones.hpp"

namespace hybridfd::minimd {
namespace {

constexpr int lanes = NeighbourList::round;
// Four float64 lanes as one value (GCC/Clang vector extensions): each lane's arithmetic
// is the scalar IEEE arithmetic, so the vector changes no result, only the speed.
using Lanes = double __attribute__((vector_size(lanes * sizeof(double))));

template <bool with_thermo_terms>
void forces(Atoms& atoms, const NeighbourList& neighbours, double cutoff, double* energy, double* virial) {
  const double cutoff_squared = cutoff * cutoff;
  const double* __restrict x = atoms.x.data();
  const double* __restrict y = atoms.y.data();
  const double* __restrict z = atoms.z.data();
  double* __restrict fx = atoms.fx.data();
  double* __restrict fy = atoms.fy.data();
  double* __restrict fz = atoms.fz.data();
  const std::int64_t* offsets = neighbours.offsets().data();
  const std::int32_t* indices = neighbours.indices().data();
  const Lanes zero = {};
  for (std::int64_t i = 0; i < atoms.owned; ++i) {
    const double xi = x[i], yi = y[i], zi = z[i];
    Lanes sum_x = zero, sum_y = zero, sum_z = zero, sum_energy = zero, sum_virial = zero;
    // Pairs in rounds of `lanes`, pair k into lane k % lanes. The lists are padded to
    // whole rounds with the phantom atom far away, whose pairs add exactly zero.
    for (std::int64_t k = offsets[i]; k < offsets[i + 1]; k += lanes) {
      const std::int32_t* j = indices + k;
      const Lanes dx = xi - Lanes{x[j[0]], x[j[1]], x[j[2]], x[j[3]]};
      const Lanes dy = yi - Lanes{y[j[0]], y[j[1]], y[j[2]], y[j[3]]};
      const Lanes dz = zi - Lanes{z[j[0]], z[j[1]], z[j[2]], z[j[3]]};
      const Lanes r2 = dx * dx + dy * dy + dz * dz;
      const auto inside = r2 < cutoff_squared;
      const Lanes r2inv = 1.0 / r2;
      const Lanes r6inv = r2inv * r2inv * r2inv;
      // LAMMPS lj/cut's arithmetic; a pair beyond the cutoff adds exactly zero.
      const Lanes fpair = inside ? r6inv * (48.0 * r6inv - 24.0) * r2inv : zero;
      sum_x += dx * fpair;
      sum_y += dy * fpair;
      sum_z += dz * fpair;
      if constexpr (with_thermo_terms) {
        sum_energy += inside ? r6inv * (4.0 * r6inv - 4.0) : zero;
        sum_virial += r2 * fpair;
      }
    }
    fx[i] = (sum_x[0] + sum_x[1]) + (sum_x[2] + sum_x[3]);
    fy[i] = (sum_y[0] + sum_y[1]) + (sum_y[2] + sum_y[3]);
    fz[i] = (sum_z[0] + sum_z[1]) + (sum_z[2] + sum_z[3]);
    if constexpr (with_thermo_terms) {
      // A full list meets every pair twice, once from each atom: each keeps half.
      energy[i] = 0.5 * ((sum_energy[0] + sum_energy[1]) + (sum_energy[2] + sum_energy[3]));
      virial[i] = 0.5 * ((sum_virial[0] + sum_virial[1]) + (sum_virial[2] + sum_virial[3]));
    }
  }
}

}  // namespace

void lennard_jones_forces(Atoms& atoms, const NeighbourList& neighbours, double cutoff, double* energy,
                          double* virial) {
  if (energy)
    forces<true>(atoms, neighbours, cutoff, energy, virial);
  else
    forces<false>(atoms, neighbours, cutoff, nullptr, nullptr);
}

}  // namespace hybridfd::minimd
