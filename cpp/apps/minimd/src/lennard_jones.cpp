// LennardJones: MiniMD's primary work loop (the MPI+OpenSHMEM slides, "Overview of
// MiniMD") over a ParticleExchange. The decomposition-independent order of every sum
// (bit-identical trajectories on any rank count and transport) is argued in
// docs/design.md, "Particles".
#include "hybridfd/minimd/lennard_jones.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>

#include "format.hpp"
#include "hybridfd/errors.hpp"

namespace hybridfd::minimd {
namespace {

// The shortest text that reads back as `value`: equal texts, equal numbers.
std::string exact(double value) {
  char digits[32];
  return std::string(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
}

// What every rank must share, in words: ranks that differ would cut different regions,
// send ghosts of different depths, or run different physics (the process grid is agreed
// by the Decomposition).
std::string setting_text(const std::array<double, 3>& box, const LennardJonesOptions& options) {
  return detail::concat("box (", exact(box[0]), ", ", exact(box[1]), ", ", exact(box[2]), "), cutoff ",
                        exact(options.cutoff), ", skin ", exact(options.skin), ", dt ", exact(options.dt),
                        ", reneighbor_every ", options.reneighbor_every, ", transport ", options.transport);
}

const char* axis_name(int axis) { return axis == 0 ? "x" : axis == 1 ? "y" : "z"; }

// Values per atom in each kind of message.
constexpr int migrating_values = 7;  // position, velocity, tag
constexpr int border_values = 5;     // position, tag, image shift
constexpr int refresh_values = 3;    // position

double as_value(std::int64_t integer) { return std::bit_cast<double>(integer); }
std::int64_t as_integer(double value) { return std::bit_cast<std::int64_t>(value); }

// How many slabs of cutoff + skin fit along each axis: the most parts an axis may be cut
// into (the "points" of the Decomposition that chooses the process grid).
Index3 slabs(const std::array<double, 3>& box, double reach) {
  Index3 result{};
  for (int axis = 0; axis < 3; ++axis) result[axis] = static_cast<std::int64_t>(std::floor(box[axis] / reach));
  return result;
}

void check_options(const std::array<double, 3>& box, std::span<const double> positions,
                   std::span<const double> velocities, std::span<const std::int64_t> tags,
                   const LennardJonesOptions& options, int ranks) {
  check_particle_transport(options.transport);
  if (!(options.cutoff > 0) || !std::isfinite(options.cutoff))
    throw ValueError(detail::concat("cutoff must be positive and finite, got ", options.cutoff));
  if (!(options.skin >= 0) || !std::isfinite(options.skin))
    throw ValueError(detail::concat("skin must be non-negative and finite, got ", options.skin));
  if (!(options.dt > 0) || !std::isfinite(options.dt))
    throw ValueError(detail::concat("dt must be positive and finite, got ", options.dt));
  if (options.reneighbor_every < 1)
    throw ValueError(detail::concat("reneighbor_every must be at least 1, got ", options.reneighbor_every));
  for (int axis = 0; axis < 3; ++axis)
    if (!(box[axis] > 0) || !std::isfinite(box[axis]))
      throw ValueError(detail::concat("box lengths must be positive and finite, got ", detail::tuple_text(box)));
  const std::int64_t atoms = static_cast<std::int64_t>(tags.size());
  if (atoms < 2) throw ValueError(detail::concat("a run needs at least 2 atoms, got ", atoms));
  if (static_cast<std::int64_t>(positions.size()) != 3 * atoms ||
      static_cast<std::int64_t>(velocities.size()) != 3 * atoms)
    throw ValueError(detail::concat("positions and velocities must hold 3 values per atom: ", atoms, " tags, ",
                                    positions.size(), " position and ", velocities.size(), " velocity values"));
  for (std::size_t k = 0; k < positions.size(); ++k)
    if (!std::isfinite(positions[k]) || !std::isfinite(velocities[k]))
      throw ValueError(detail::concat("atom with tag ", tags[k / 3], " has a non-finite position or velocity"));
  std::vector<std::int64_t> sorted(tags.begin(), tags.end());
  std::sort(sorted.begin(), sorted.end());
  if (const auto repeated = std::adjacent_find(sorted.begin(), sorted.end()); repeated != sorted.end())
    throw ValueError(detail::concat("tag ", *repeated, " is given to more than one atom"));
  if (sorted.front() < 0 || sorted.back() > (std::int64_t{1} << 56))
    throw ValueError(detail::concat("tags must lie in [0, 2^56], got ", sorted.front(), " .. ", sorted.back()));

  const double reach = options.cutoff + options.skin;
  const Index3 most = slabs(box, reach);
  const auto too_thin = [&](const ProcessGrid& grid) {
    return detail::concat("box ", detail::tuple_text(box), " over the process grid ", detail::tuple_text(grid),
                          " gives each rank a region ", box[0] / grid[0], " x ", box[1] / grid[1], " x ",
                          box[2] / grid[2], ", thinner than cutoff + skin = ", reach,
                          "; an axis may be cut into at most ", detail::tuple_text(most), " parts");
  };
  if (options.grid) {
    const ProcessGrid& grid = *options.grid;
    for (int axis = 0; axis < 3; ++axis)
      if (grid[axis] < 1)
        throw ValueError(detail::concat("process grid ", detail::tuple_text(grid), " has a non-positive entry"));
    if (std::int64_t{grid[0]} * grid[1] * grid[2] != ranks)
      throw ValueError(detail::concat("process grid ", detail::tuple_text(grid), " has ",
                                      std::int64_t{grid[0]} * grid[1] * grid[2], " processes but the communicator has ",
                                      ranks, " ranks"));
    for (int axis = 0; axis < 3; ++axis)
      if (grid[axis] > most[axis]) throw ValueError(too_thin(grid));
  } else {
    for (int axis = 0; axis < 3; ++axis)
      if (most[axis] < 1)
        throw ValueError(detail::concat("box ", detail::tuple_text(box), " is shorter than cutoff + skin = ", reach,
                                        " along ", axis_name(axis)));
    try {
      automatic_grid(most, ranks);
    } catch (const ValueError&) {
      throw ValueError(detail::concat("box ", detail::tuple_text(box), " cannot be split over ", ranks,
                                      " ranks with every rank's region at least cutoff + skin = ", reach,
                                      " thick: an axis may be cut into at most ", detail::tuple_text(most), " parts"));
    }
  }
}

}  // namespace

LennardJones::LennardJones(MPI_Comm comm, const std::array<double, 3>& box, std::span<const double> positions,
                           std::span<const double> velocities, std::span<const std::int64_t> tags,
                           const LennardJonesOptions& options)
    : options_(options) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  agree_on_setting(comm, find_problem([&] { check_options(box, positions, velocities, tags, options, ranks); }),
                   setting_text(box, options), "particle setting");
  const double reach = options.cutoff + options.skin;
  // The process grid and Cartesian communicator come from the grids' Decomposition, on a
  // domain of slabs of cutoff + skin: it cuts no axis into more slabs than fit.
  decomposition_ = std::make_unique<Decomposition>(comm, Domain{slabs(box, reach), {true, true, true}}, options.grid);
  const MPI_Comm cart = decomposition_->communicator();
  rank_ = decomposition_->rank();
  region_ = ParticleRegion(box, decomposition_->grid(), decomposition_->coords(rank_));
  exchange_ = make_particle_exchange(options.transport, cart);
  // Atoms selected as ghosts lie within cutoff + skin of the region's face, with a margin
  // far above rounding, so that a pair whose distance rounds below cutoff + skin is never
  // missed on one decomposition and kept on another.
  border_ = reach * (1 + 1e-9);
  for (int axis = 0; axis < 3; ++axis) {
    const auto [below, above] = decomposition_->neighbours(axis);
    const int coordinate = region_.coords()[axis];
    const int parts = region_.grid()[axis];
    Swap& down = swaps_[2 * axis];
    Swap& up = swaps_[2 * axis + 1];
    down.neighbour = below, down.source = above;
    up.neighbour = above, up.source = below;
    if (coordinate == 0) down.offset = box[axis], down.image_delta = image_shift_code(axis, 1);
    if (coordinate == parts - 1) up.offset = -box[axis], up.image_delta = image_shift_code(axis, -1);
  }

  atoms_total_ = static_cast<std::int64_t>(tags.size());
  atoms_.reserve(atoms_total_ / decomposition_->size() + 64);
  for (std::int64_t atom = 0; atom < atoms_total_; ++atom) {
    std::array<double, 3> position{};
    bool mine = true;
    for (int axis = 0; axis < 3; ++axis) {
      position[axis] = region_.wrap(axis, positions[3 * atom + axis]);
      mine = mine && region_.owner_coordinate(axis, position[axis]) == region_.coords()[axis];
    }
    if (!mine) continue;
    atoms_.reserve(atoms_.owned + 1);
    const auto at = static_cast<std::size_t>(atoms_.owned++);
    atoms_.x[at] = position[0], atoms_.y[at] = position[1], atoms_.z[at] = position[2];
    atoms_.vx[at] = velocities[3 * atom], atoms_.vy[at] = velocities[3 * atom + 1];
    atoms_.vz[at] = velocities[3 * atom + 2];
    atoms_.tag[at] = tags[atom];
    atoms_.image[at] = no_image_shift;
  }
  sort_by_position();
  build_borders();
  neighbours_.build(atoms_, region_.box(), lower(), upper(), border_, reach);
  compute_forces(true);
}

LennardJones::~LennardJones() = default;

std::array<double, 3> LennardJones::lower() const { return {region_.lower(0), region_.lower(1), region_.lower(2)}; }
std::array<double, 3> LennardJones::upper() const { return {region_.upper(0), region_.upper(1), region_.upper(2)}; }

// LAMMPS fix nve (mass 1): v += dt/2 f; x += dt v.
void LennardJones::initial_integrate() {
  const double half = 0.5 * options_.dt, dt = options_.dt;
  double* __restrict x = atoms_.x.data();
  double* __restrict y = atoms_.y.data();
  double* __restrict z = atoms_.z.data();
  double* __restrict vx = atoms_.vx.data();
  double* __restrict vy = atoms_.vy.data();
  double* __restrict vz = atoms_.vz.data();
  const double* __restrict fx = atoms_.fx.data();
  const double* __restrict fy = atoms_.fy.data();
  const double* __restrict fz = atoms_.fz.data();
  for (std::int64_t i = 0; i < atoms_.owned; ++i) {
    vx[i] += half * fx[i], vy[i] += half * fy[i], vz[i] += half * fz[i];
    x[i] += dt * vx[i], y[i] += dt * vy[i], z[i] += dt * vz[i];
  }
}

void LennardJones::final_integrate() {
  const double half = 0.5 * options_.dt;
  double* __restrict vx = atoms_.vx.data();
  double* __restrict vy = atoms_.vy.data();
  double* __restrict vz = atoms_.vz.data();
  const double* __restrict fx = atoms_.fx.data();
  const double* __restrict fy = atoms_.fy.data();
  const double* __restrict fz = atoms_.fz.data();
  for (std::int64_t i = 0; i < atoms_.owned; ++i) vx[i] += half * fx[i], vy[i] += half * fy[i], vz[i] += half * fz[i];
}

// Regions from `mine` to `owner` along a periodic axis of `parts`, the short way round:
// positive up, negative down, in (-parts/2, parts/2].
namespace {
int signed_hops(int owner, int mine, int parts) {
  const int up = ((owner - mine) % parts + parts) % parts;
  return up > parts / 2 ? up - parts : up;
}
}  // namespace

// Every atom goes to the rank whose region holds its wrapped position, one neighbour
// per hop along x, then y, then z (MiniMD's exchange), the short way round the periodic
// box. An atom may cross more than one region between migrations (the crowding test
// drives atoms fast): one allreduce tells all ranks how many hops each axis needs,
// usually one or none.
void LennardJones::migrate() {
  atoms_.ghosts = 0;
  std::array<int, 3> hops{};
  const auto& mine = region_.coords();
  for (std::int64_t i = 0; i < atoms_.owned; ++i) {
    atoms_.x[i] = region_.wrap(0, atoms_.x[i]);
    atoms_.y[i] = region_.wrap(1, atoms_.y[i]);
    atoms_.z[i] = region_.wrap(2, atoms_.z[i]);
    const std::array<double, 3> position{atoms_.x[i], atoms_.y[i], atoms_.z[i]};
    for (int axis = 0; axis < 3; ++axis)
      hops[axis] = std::max(hops[axis], std::abs(signed_hops(region_.owner_coordinate(axis, position[axis]), mine[axis],
                                                             region_.grid()[axis])));
  }
  MPI_Allreduce(MPI_IN_PLACE, hops.data(), 3, MPI_INT, MPI_MAX, communicator());
  migration_hops_ = hops;
  for (int axis = 0; axis < 3; ++axis) {
    double* coordinate = atoms_.position()[axis];
    for (int hop = 0; hop < hops[axis]; ++hop) {
      std::array<std::int64_t, 2> leaving{};  // down, up
      for (std::int64_t i = 0; i < atoms_.owned;) {
        const int hops_left =
            signed_hops(region_.owner_coordinate(axis, coordinate[i]), mine[axis], region_.grid()[axis]);
        if (hops_left == 0) {
          ++i;
          continue;
        }
        const int up = hops_left > 0 ? 1 : 0;
        double* into = send_[up].reserve((leaving[up] + 1) * migrating_values) + leaving[up] * migrating_values;
        ++leaving[up];
        into[0] = atoms_.x[i], into[1] = atoms_.y[i], into[2] = atoms_.z[i];
        into[3] = atoms_.vx[i], into[4] = atoms_.vy[i], into[5] = atoms_.vz[i];
        into[6] = as_value(atoms_.tag[i]);
        atoms_.move(--atoms_.owned, i);  // the last atom fills the gap
      }
      // ParticleBuffer::reserve may move the data: take the pointers once all is packed.
      const std::array<ParticleSend, 2> sends{
          ParticleSend{swaps_[2 * axis].neighbour, 2 * axis, send_[0].data(), leaving[0] * migrating_values},
          ParticleSend{swaps_[2 * axis + 1].neighbour, 2 * axis + 1, send_[1].data(), leaving[1] * migrating_values}};
      std::array<ParticleReceive, 2> receives{ParticleReceive{swaps_[2 * axis].source, 2 * axis, &receive_[0]},
                                              ParticleReceive{swaps_[2 * axis + 1].source, 2 * axis + 1, &receive_[1]}};
      exchange(axis, sends, receives, false);
      for (const ParticleBuffer& buffer : receive_) {
        const std::int64_t arriving = buffer.count / migrating_values;
        atoms_.reserve(atoms_.owned + arriving);
        const double* from = buffer.data();
        for (std::int64_t k = 0; k < arriving; ++k, from += migrating_values) {
          const auto at = static_cast<std::size_t>(atoms_.owned++);
          atoms_.x[at] = from[0], atoms_.y[at] = from[1], atoms_.z[at] = from[2];
          atoms_.vx[at] = from[3], atoms_.vy[at] = from[4], atoms_.vz[at] = from[5];
          atoms_.tag[at] = as_integer(from[6]);
          atoms_.image[at] = no_image_shift;
        }
      }
    }
  }
}

// An axis of one region (the grid is the same on every rank, so every rank agrees) has
// only messages to this rank itself: copies, without the transport's synchronisation.
void LennardJones::exchange(int axis, std::span<const ParticleSend> sends, std::span<ParticleReceive> receives,
                            bool sizes_known) {
  if (region_.grid()[axis] == 1)
    deliver_particles_to_self(sends, receives, rank_);
  else
    exchange_->exchange(sends, receives, sizes_known);
}

// LAMMPS's atom sort: owned atoms in order of the cells (half of cutoff + skin wide)
// of the region, so atoms near in space are near in memory for the list build and the
// force loop's gathers. No result depends on the order: lists are sorted by tag, thermo
// sums by tag.
void LennardJones::sort_by_position() {
  std::array<int, 3> cells{};
  std::array<double, 3> per_length{};
  for (int axis = 0; axis < 3; ++axis) {
    const double extent = region_.upper(axis) - region_.lower(axis);
    cells[axis] = std::max(1, static_cast<int>(extent / ((options_.cutoff + options_.skin) / 2)));
    per_length[axis] = cells[axis] / extent;
  }
  const auto owned = static_cast<std::size_t>(atoms_.owned);
  cell_of_.resize(owned), cell_order_.resize(owned);
  cell_start_.assign(static_cast<std::size_t>(cells[0]) * cells[1] * cells[2] + 1, 0);
  const auto position = atoms_.position();
  for (std::size_t i = 0; i < owned; ++i) {
    int cell = 0;
    for (int axis = 0; axis < 3; ++axis)
      cell = cell * cells[axis] +
             std::clamp(static_cast<int>((position[axis][i] - region_.lower(axis)) * per_length[axis]), 0,
                        cells[axis] - 1);
    cell_of_[i] = cell;
    ++cell_start_[static_cast<std::size_t>(cell) + 1];
  }
  std::partial_sum(cell_start_.begin(), cell_start_.end(), cell_start_.begin());
  for (std::size_t i = 0; i < owned; ++i)
    cell_order_[static_cast<std::size_t>(cell_start_[static_cast<std::size_t>(cell_of_[i])]++)] =
        static_cast<std::int32_t>(i);
  atoms_.permute_owned(cell_order_, spare_);
}

// MiniMD's borders: along x, y, z in turn, the atoms within border_ of the lower face go
// down, those within border_ of the upper face go up; candidates are the owned atoms and
// the ghosts of earlier axes, so edge and corner images arrive without diagonal messages.
// Across the periodic edge a ghost's coordinate is its owner's plus or minus the box
// length: one addition, the same on any rank count.
void LennardJones::build_borders() {
  atoms_.ghosts = 0;
  largest_border_message_ = 0;
  for (int axis = 0; axis < 3; ++axis) {
    const double* coordinate = atoms_.position()[axis];
    const std::int64_t candidates = atoms_.total();
    const double low = region_.lower(axis) + border_, high = region_.upper(axis) - border_;
    Swap& down = swaps_[2 * axis];
    Swap& up = swaps_[2 * axis + 1];
    down.send_list.clear(), up.send_list.clear();
    for (std::int64_t i = 0; i < candidates; ++i) {
      if (coordinate[i] < low) down.send_list.push_back(static_cast<std::int32_t>(i));
      if (coordinate[i] >= high) up.send_list.push_back(static_cast<std::int32_t>(i));
    }
    std::array<ParticleSend, 2> sends;
    for (int direction = 0; direction < 2; ++direction) {
      const Swap& swap = swaps_[2 * axis + direction];
      const auto count = static_cast<std::int64_t>(swap.send_list.size());
      double* into = send_[direction].reserve(count * border_values);
      for (const std::int32_t i : swap.send_list) {
        into[0] = atoms_.x[i], into[1] = atoms_.y[i], into[2] = atoms_.z[i];
        into[axis] += swap.offset;
        into[3] = as_value(atoms_.tag[i]);
        into[4] = static_cast<double>(atoms_.image[i] + swap.image_delta);
        into += border_values;
      }
      sends[direction] = {swap.neighbour, 2 * axis + direction, send_[direction].data(), count * border_values};
      largest_border_message_ = std::max(largest_border_message_, count * border_values);
    }
    std::array<ParticleReceive, 2> receives{ParticleReceive{down.source, 2 * axis, &receive_[0]},
                                            ParticleReceive{up.source, 2 * axis + 1, &receive_[1]}};
    exchange(axis, sends, receives, false);
    for (int direction = 0; direction < 2; ++direction) {
      Swap& swap = swaps_[2 * axis + direction];
      const ParticleBuffer& buffer = receive_[direction];
      swap.first_ghost = atoms_.total();
      swap.ghosts = buffer.count / border_values;
      atoms_.reserve(atoms_.total() + swap.ghosts);
      const double* from = buffer.data();
      for (std::int64_t k = 0; k < swap.ghosts; ++k, from += border_values) {
        const auto at = static_cast<std::size_t>(swap.first_ghost + k);
        atoms_.x[at] = from[0], atoms_.y[at] = from[1], atoms_.z[at] = from[2];
        atoms_.tag[at] = as_integer(from[3]);
        atoms_.image[at] = static_cast<std::int32_t>(from[4]);
      }
      atoms_.ghosts += swap.ghosts;
    }
  }
}

// Every step between migrations: the ghosts' positions over the lists of the last
// border exchange, the same stages in the same order.
void LennardJones::refresh_ghosts() {
  for (int axis = 0; axis < 3; ++axis) {
    std::array<ParticleSend, 2> sends;
    std::array<ParticleReceive, 2> receives;
    for (int direction = 0; direction < 2; ++direction) {
      const Swap& swap = swaps_[2 * axis + direction];
      double* into = send_[direction].reserve(static_cast<std::int64_t>(swap.send_list.size()) * refresh_values);
      const double* x = atoms_.x.data();
      const double* y = atoms_.y.data();
      const double* z = atoms_.z.data();
      for (const std::int32_t i : swap.send_list) {
        into[0] = x[i], into[1] = y[i], into[2] = z[i];
        into[axis] += swap.offset;
        into += refresh_values;
      }
      sends[direction] = {swap.neighbour, 2 * axis + direction, send_[direction].data(),
                          static_cast<std::int64_t>(swap.send_list.size()) * refresh_values};
      receive_[direction].count = swap.ghosts * refresh_values;
      receives[direction] = {swap.source, 2 * axis + direction, &receive_[direction]};
    }
    exchange(axis, sends, receives, true);
    for (int direction = 0; direction < 2; ++direction) {
      const Swap& swap = swaps_[2 * axis + direction];
      const double* from = receive_[direction].data();
      double* x = atoms_.x.data() + swap.first_ghost;
      double* y = atoms_.y.data() + swap.first_ghost;
      double* z = atoms_.z.data() + swap.first_ghost;
      for (std::int64_t k = 0; k < swap.ghosts; ++k, from += refresh_values)
        x[k] = from[0], y[k] = from[1], z[k] = from[2];
    }
  }
}

void LennardJones::compute_forces(bool with_thermo_terms) {
  if (with_thermo_terms) {
    energy_.resize(std::max(energy_.size(), static_cast<std::size_t>(atoms_.owned)));
    virial_.resize(energy_.size());
    lennard_jones_forces(atoms_, neighbours_, options_.cutoff, energy_.data(), virial_.data());
  } else {
    lennard_jones_forces(atoms_, neighbours_, options_.cutoff, nullptr, nullptr);
  }
}

// Global sums in a fixed order: every rank's per-atom terms gathered on rank 0, summed
// in order of tag, the sums broadcast (only at thermo steps).
ThermoRecord LennardJones::thermo() {
  constexpr int values = 4;  // tag, energy, virial, m v^2
  const MPI_Comm comm = communicator();
  const int ranks = decomposition_->size();
  const auto owned = static_cast<std::size_t>(atoms_.owned);
  std::vector<double>& scratch = thermo_scratch_;
  scratch.resize(std::max(scratch.size(), owned * values + static_cast<std::size_t>(3 * ranks) +
                                              (rank_ == 0 ? static_cast<std::size_t>(atoms_total_) * values : 0)));
  double* local = scratch.data();
  for (std::size_t i = 0; i < owned; ++i) {
    local[values * i] = as_value(atoms_.tag[i]);
    local[values * i + 1] = energy_[i];
    local[values * i + 2] = virial_[i];
    local[values * i + 3] = atoms_.vx[i] * atoms_.vx[i] + atoms_.vy[i] * atoms_.vy[i] + atoms_.vz[i] * atoms_.vz[i];
  }
  std::vector<int>& counts = thermo_counts_;
  std::vector<int>& displacements = thermo_displacements_;
  counts.resize(static_cast<std::size_t>(ranks)), displacements.resize(static_cast<std::size_t>(ranks));
  const int mine = static_cast<int>(owned * values);
  MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::partial_sum(counts.begin(), counts.end() - 1, displacements.begin() + 1);
  double* all = local + owned * values;
  MPI_Gatherv(local, mine, MPI_DOUBLE, all, counts.data(), displacements.data(), MPI_DOUBLE, 0, comm);
  std::array<double, 3> sums{};  // energy, virial, m v^2
  if (rank_ == 0) {
    std::vector<std::int64_t>& order = thermo_order_;
    order.resize(static_cast<std::size_t>(atoms_total_));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [all](std::int64_t a, std::int64_t b) {
      return as_integer(all[values * a]) < as_integer(all[values * b]);
    });
    for (const std::int64_t atom : order)
      for (int term = 0; term < 3; ++term) sums[term] += all[values * atom + 1 + term];
  }
  MPI_Bcast(sums.data(), 3, MPI_DOUBLE, 0, comm);
  const auto& box = region_.box();
  const double atoms = static_cast<double>(atoms_total_);
  const double volume = box[0] * box[1] * box[2];
  ThermoRecord record;
  record.step = step_;
  record.temperature = sums[2] / (3 * atoms - 3);
  record.potential_energy = sums[0] / atoms;
  record.pressure = (sums[2] + sums[1]) / (3 * volume);
  record.total_energy = record.potential_energy + 0.5 * sums[2] / atoms;
  return record;
}

void LennardJones::take_census() {
  std::array<std::int64_t, 2> totals{atoms_.owned, 0};
  for (std::int64_t i = 0; i < atoms_.owned; ++i) totals[1] += atoms_.tag[i];
  MPI_Allreduce(MPI_IN_PLACE, totals.data(), 2, MPI_INT64_T, MPI_SUM, communicator());
  census_.push_back({step_, totals[0], totals[1]});
}

std::vector<ThermoRecord> LennardJones::run(std::int64_t steps, std::int64_t thermo_every, bool census) {
  // Every rank runs the same steps, thermo and census, each a collective.
  agree_on_setting(communicator(), find_problem([&] {
                     if (steps < 0) throw ValueError(detail::concat("steps must be non-negative, got ", steps));
                     if (thermo_every < 0)
                       throw ValueError(detail::concat("thermo_every must be non-negative, got ", thermo_every));
                   }),
                   detail::concat("steps ", steps, ", thermo_every ", thermo_every, ", census ", census),
                   "run's steps, thermo_every and census");
  const auto seconds = [] { return MPI_Wtime(); };
  std::vector<ThermoRecord> records;
  records.reserve(static_cast<std::size_t>(2 + (thermo_every > 0 ? steps / thermo_every : 0)));
  double start = seconds();
  records.push_back(thermo());
  times_.thermo += seconds() - start;
  if (census) census_.clear(), take_census();
  const double run_start = seconds();
  const std::int64_t last = step_ + steps;
  while (step_ < last) {
    ++step_;
    const bool thermo_step = step_ == last || (thermo_every > 0 && step_ % thermo_every == 0);
    initial_integrate();
    start = seconds();
    if (step_ % options_.reneighbor_every == 0) {
      migrate();
      sort_by_position();
      build_borders();
      const double built = seconds();
      times_.communication += built - start;
      neighbours_.build(atoms_, region_.box(), lower(), upper(), border_, options_.cutoff + options_.skin);
      times_.neighbour += seconds() - built;
      if (census)
        for (std::int64_t i = 0; i < atoms_.owned; ++i)
          for (int axis = 0; axis < 3; ++axis)
            if (region_.owner_coordinate(axis, atoms_.position()[axis][i]) != region_.coords()[axis])
              throw std::logic_error(detail::concat("atom ", atoms_.tag[i], " is on rank ", rank_,
                                                    " after migration, outside its region"));
    } else {
      refresh_ghosts();
      times_.communication += seconds() - start;
    }
    start = seconds();
    compute_forces(thermo_step);
    final_integrate();
    times_.force += seconds() - start;
    if (thermo_step) {
      start = seconds();
      records.push_back(thermo());
      times_.thermo += seconds() - start;
    }
    if (census) take_census();
  }
  times_.total += seconds() - run_start;
  times_.steps += steps;
  return records;
}

GatheredAtoms LennardJones::gather() const {
  constexpr int values = 7;
  const MPI_Comm comm = communicator();
  const int ranks = decomposition_->size();
  std::vector<double> local(static_cast<std::size_t>(atoms_.owned) * values);
  for (std::int64_t i = 0; i < atoms_.owned; ++i) {
    double* into = local.data() + values * i;
    into[0] = as_value(atoms_.tag[i]);
    into[1] = atoms_.x[i], into[2] = atoms_.y[i], into[3] = atoms_.z[i];
    into[4] = atoms_.vx[i], into[5] = atoms_.vy[i], into[6] = atoms_.vz[i];
  }
  std::vector<int> counts(static_cast<std::size_t>(ranks)), displacements(static_cast<std::size_t>(ranks));
  const int mine = static_cast<int>(local.size());
  MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  std::partial_sum(counts.begin(), counts.end() - 1, displacements.begin() + 1);
  std::vector<double> all(static_cast<std::size_t>(displacements.back() + counts.back()));
  MPI_Allgatherv(local.data(), mine, MPI_DOUBLE, all.data(), counts.data(), displacements.data(), MPI_DOUBLE, comm);
  const std::size_t atoms = all.size() / values;
  std::vector<std::size_t> order(atoms);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&all](std::size_t a, std::size_t b) { return as_integer(all[values * a]) < as_integer(all[values * b]); });
  GatheredAtoms result;
  result.tags.resize(atoms);
  result.positions.resize(3 * atoms);
  result.velocities.resize(3 * atoms);
  for (std::size_t k = 0; k < atoms; ++k) {
    const double* from = all.data() + values * order[k];
    result.tags[k] = as_integer(from[0]);
    for (int axis = 0; axis < 3; ++axis) {
      result.positions[3 * k + axis] = from[1 + axis];
      result.velocities[3 * k + axis] = from[4 + axis];
    }
  }
  return result;
}

}  // namespace hybridfd::minimd
