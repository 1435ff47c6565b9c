// The Lennard-Jones force kernel (MiniMD's force_lj.cpp compute with a full list, in
// LAMMPS pair lj/cut's arithmetic: forcelj = r^-6 (48 r^-6 - 24), fpair = forcelj r^-2).
// Each atom's pairs are taken in its list's order (sorted by neighbour tag and image) into
// four lanes, pair k into lane k % 4, so the sum is the same whatever the decomposition.
#include "hybridfd/lennard_jones.hpp"

namespace hybridfd {
namespace {

constexpr int lanes = 4;

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
  for (std::int64_t i = 0; i < atoms.owned; ++i) {
    const double xi = x[i], yi = y[i], zi = z[i];
    double sum_x[lanes] = {}, sum_y[lanes] = {}, sum_z[lanes] = {}, sum_energy[lanes] = {}, sum_virial[lanes] = {};
    const auto pair = [&](std::int32_t j, int lane) {
      const double dx = xi - x[j], dy = yi - y[j], dz = zi - z[j];
      const double r2 = dx * dx + dy * dy + dz * dz;
      const bool inside = r2 < cutoff_squared;
      const double r2inv = 1.0 / r2;
      const double r6inv = r2inv * r2inv * r2inv;
      const double fpair = inside ? r6inv * (48.0 * r6inv - 24.0) * r2inv : 0.0;
      sum_x[lane] += dx * fpair;
      sum_y[lane] += dy * fpair;
      sum_z[lane] += dz * fpair;
      if constexpr (with_thermo_terms) {
        sum_energy[lane] += inside ? r6inv * (4.0 * r6inv - 4.0) : 0.0;
        sum_virial[lane] += r2 * fpair;
      }
    };
    const std::int32_t* list = indices + offsets[i];
    const std::int64_t count = offsets[i + 1] - offsets[i];
    std::int64_t k = 0;
    for (; k + lanes <= count; k += lanes)
      for (int lane = 0; lane < lanes; ++lane) pair(list[k + lane], lane);
    for (int lane = 0; k < count; ++k, ++lane) pair(list[k], lane);
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

}  // namespace hybridfd
