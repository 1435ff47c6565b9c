// LennardJones: the MiniMD mini-app of the MPI+OpenSHMEM slides ("Overview of MiniMD",
// its primary work loop), the standard LJ melt in reduced units (mass 1, epsilon 1,
// sigma 1). Every step: velocity Verlet's first half; on every reneighbor_every-th step
// wrap positions into the box, migrate atoms to their owner, rebuild the ghost ("border")
// atoms in three staged exchanges (x, then y with the x ghosts, then z) and the
// neighbour lists, on other steps refresh the ghosts' positions over the same lists;
// forces over a full neighbour list (so no ghost forces go back); the second half.
// The particle messages go through a ParticleExchange (p2p, rma-fence, rma-notify).
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hybridfd/decomposition.hpp"
#include "hybridfd/minimd/neighbour_list.hpp"
#include "hybridfd/minimd/particle_exchange.hpp"
#include "hybridfd/minimd/particles.hpp"

namespace hybridfd::minimd {

struct LennardJonesOptions {
  double cutoff = 2.5;
  double skin = 0.3;
  double dt = 0.005;
  int reneighbor_every = 20;
  std::string transport = "p2p";
  std::optional<ProcessGrid> grid;  // none: the grid of least surface (Decomposition's)
};

// LAMMPS `lj` units with `thermo_modify norm yes`: energies per atom, temperature with
// 3N - 3 degrees of freedom, pressure (sum m v^2 + virial) / (3 V).
struct ThermoRecord {
  std::int64_t step = 0;
  double temperature = 0;
  double potential_energy = 0;
  double pressure = 0;
  double total_energy = 0;
};

// All ranks' atom count and sum of tags after a step (the conservation check).
struct Census {
  std::int64_t step = 0;
  std::int64_t atoms = 0;
  std::int64_t tag_sum = 0;
};

// Seconds spent since the last reset, this rank (communication: migration, border
// building and position refresh, packing included; thermo: its gathers and sums).
struct ParticleTimes {
  std::int64_t steps = 0;
  double total = 0;
  double communication = 0;
  double force = 0;
  double neighbour = 0;
  double thermo = 0;
};

// Every atom, sorted by tag (positions and velocities as (N, 3) row-major).
struct GatheredAtoms {
  std::vector<std::int64_t> tags;
  std::vector<double> positions;
  std::vector<double> velocities;
};

class LennardJones {
 public:
  // Collective over comm. Every rank passes the same global state: box lengths, N
  // positions and velocities (row-major (N, 3)) and N distinct tags; each rank keeps the
  // atoms in its region. Throws ValueError on every rank, before any particle message,
  // naming the value: a non-positive box length, cutoff, dt or reneighbor_every, a
  // negative skin, a transport that is unknown or moves no particles, a process grid
  // that does not fit the communicator or leaves a rank's region thinner than
  // cutoff + skin, non-finite positions or velocities, repeated tags, fewer than 2 atoms.
  LennardJones(MPI_Comm comm, const std::array<double, 3>& box, std::span<const double> positions,
               std::span<const double> velocities, std::span<const std::int64_t> tags,
               const LennardJonesOptions& options);
  ~LennardJones();
  LennardJones(const LennardJones&) = delete;
  LennardJones& operator=(const LennardJones&) = delete;

  // Collective. Runs `steps` steps; returns the thermo records of the starting step,
  // every step divisible by thermo_every (0: none between) and the last step. With
  // `census`, records the global atom count and tag sum at the start and after every
  // step (census(), this run's only).
  std::vector<ThermoRecord> run(std::int64_t steps, std::int64_t thermo_every, bool census = false);
  // Collective: every atom on every rank.
  GatheredAtoms gather() const;

  std::int64_t step() const { return step_; }
  std::int64_t atoms() const { return atoms_total_; }
  const ProcessGrid& grid() const { return decomposition_->grid(); }
  MPI_Comm communicator() const { return decomposition_->communicator(); }
  std::int64_t owned_atoms() const { return atoms_.owned; }
  std::int64_t ghost_atoms() const { return atoms_.ghosts; }
  std::int64_t neighbour_pairs() const { return neighbours_.pairs(); }
  // This rank's largest message of the last border exchange, in float64 values.
  std::int64_t largest_border_message() const { return largest_border_message_; }
  // The most regions any atom crossed per axis before the last migration (all ranks).
  const std::array<int, 3>& migration_hops() const { return migration_hops_; }
  const std::vector<Census>& census() const { return census_; }
  const ParticleTimes& times() const { return times_; }
  void reset_times() { times_ = {}; }

 private:
  // One direction of one axis of the border exchange: what goes, what it adds.
  struct Swap {
    int neighbour = MPI_PROC_NULL;  // where this direction's messages go
    int source = MPI_PROC_NULL;     // where they come from
    std::vector<std::int32_t> send_list;
    double offset = 0;  // added to the axis's coordinate: a box length across the periodic edge
    std::int32_t image_delta = 0;
    std::int64_t first_ghost = 0;
    std::int64_t ghosts = 0;  // received
  };

  void initial_integrate();
  void final_integrate();
  void exchange(int axis, std::span<const ParticleSend> sends, std::span<ParticleReceive> receives, bool sizes_known);
  void migrate();
  void sort_by_position();
  void build_borders();
  void refresh_ghosts();
  void compute_forces(bool with_thermo_terms);
  ThermoRecord thermo();
  void take_census();
  std::array<double, 3> lower() const;
  std::array<double, 3> upper() const;

  std::unique_ptr<Decomposition> decomposition_;
  std::unique_ptr<ParticleExchange> exchange_;
  ParticleRegion region_;
  LennardJonesOptions options_;
  double border_ = 0;  // how deep into a region the atoms sent as ghosts lie
  int rank_ = 0;
  std::int64_t atoms_total_ = 0;
  std::int64_t step_ = 0;
  Atoms atoms_;
  Atoms spare_;                                                  // sort_by_position's scratch
  std::vector<std::int32_t> cell_of_, cell_order_, cell_start_;  // its counting sort
  NeighbourList neighbours_;
  std::array<Swap, 6> swaps_;  // by direction: 2 * axis + (1 if travelling up)
  std::array<ParticleBuffer, 2> send_, receive_;
  std::vector<double> energy_, virial_;  // per owned atom, at thermo steps (halved pair sums)
  // Thermo's gather buffers and rank 0's tag order, kept between thermo steps.
  std::vector<double> thermo_scratch_;
  std::vector<int> thermo_counts_, thermo_displacements_;
  std::vector<std::int64_t> thermo_order_;
  std::int64_t largest_border_message_ = 0;
  std::array<int, 3> migration_hops_{};
  std::vector<Census> census_;
  ParticleTimes times_;
};

// The force on every owned atom over its full, sorted neighbour list; with `energy`
// and `virial` (else null) also each atom's halved sums of pair energy and r . f.
// Pairs are summed in list order into four partial sums, combined as (0 + 1) + (2 + 3):
// a fixed order, and one the compiler can vectorise.
void lennard_jones_forces(Atoms& atoms, const NeighbourList& neighbours, double cutoff, double* energy, double* virial);

}  // namespace hybridfd::minimd
