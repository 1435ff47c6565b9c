#include "hybridfd/decomposition.hpp"

#include <array>
#include <limits>
#include <numeric>
#include <string>

#include "format.hpp"
#include "hybridfd/errors.hpp"

namespace hybridfd {

namespace {

std::string domain_text(const Domain& domain) {
  std::array<std::string, 3> periodic;
  for (int axis = 0; axis < 3; ++axis) periodic[axis] = domain.periodic[axis] ? "True" : "False";
  return detail::concat("domain shape ", detail::tuple_text(domain.shape), ", periodic ", detail::tuple_text(periodic),
                        ", dtype ", scalar_type_name(domain.dtype));
}

}  // namespace

AxisPart split_axis(std::int64_t points, int parts, int part) {
  const std::int64_t base = points / parts;
  const std::int64_t extra = points % parts;
  const std::int64_t offset = part * base + std::min<std::int64_t>(part, extra);
  return {offset, base + (part < extra ? 1 : 0)};
}

std::int64_t total_surface(const Index3& shape, const ProcessGrid& grid) {
  return 2 * (grid[0] * shape[1] * shape[2] + grid[1] * shape[0] * shape[2] + grid[2] * shape[0] * shape[1]);
}

ProcessGrid automatic_grid(const Index3& shape, int ranks) {
  if (ranks < 1) throw ValueError(detail::concat("cannot decompose over ", ranks, " ranks"));
  ProcessGrid best{0, 0, 0};
  std::int64_t best_surface = std::numeric_limits<std::int64_t>::max();
  // Descending px, py: among equal surfaces the first found is the lexicographically
  // largest grid, which cuts x first as GPAW does.
  for (int px = ranks; px >= 1; --px) {
    if (ranks % px || px > shape[0]) continue;
    for (int py = ranks / px; py >= 1; --py) {
      if ((ranks / px) % py || py > shape[1]) continue;
      const int pz = ranks / px / py;
      if (pz > shape[2]) continue;
      const ProcessGrid grid{px, py, pz};
      const std::int64_t surface = total_surface(shape, grid);
      if (surface < best_surface) best_surface = surface, best = grid;
    }
  }
  if (best[0] == 0)
    throw ValueError(detail::concat("cannot split a domain of shape ", detail::tuple_text(shape), " over ", ranks,
                                    " ranks: every factorisation cuts some axis into more parts than it has points"));
  return best;
}

Decomposition::Decomposition(MPI_Comm comm, const Domain& domain, std::optional<ProcessGrid> grid) : domain_(domain) {
  MPI_Comm_size(comm, &size_);
  const auto problem = find_problem([&] {
    domain.validate();
    if (!grid) {
      grid_ = automatic_grid(domain.shape, size_);
      return;
    }
    grid_ = *grid;
    const auto& g = grid_;
    for (int axis = 0; axis < 3; ++axis)
      if (g[axis] < 1)
        throw ValueError(detail::concat("process grid ", detail::tuple_text(g), " has a non-positive entry"));
    if (std::int64_t{g[0]} * g[1] * g[2] != size_)
      throw ValueError(detail::concat("process grid ", detail::tuple_text(g), " has ", std::int64_t{g[0]} * g[1] * g[2],
                                      " processes but the communicator has ", size_, " ranks"));
    for (int axis = 0; axis < 3; ++axis)
      if (g[axis] > domain.shape[axis])
        throw ValueError(detail::concat("process grid ", detail::tuple_text(g), " cuts axis ", axis,
                                        " of domain shape ", detail::tuple_text(domain.shape),
                                        " into more parts than it has points"));
  });
  // Ranks that disagree on the domain or the grid would cut different boxes and send
  // faces their neighbours do not expect.
  agree_on_setting(comm, problem, detail::concat(domain_text(domain), ", process grid ", detail::tuple_text(grid_)),
                   "domain and process grid");
  for (int axis = 0; axis < 3; ++axis) {
    splits_[axis].resize(static_cast<std::size_t>(grid_[axis]) + 1);
    for (int part = 0; part <= grid_[axis]; ++part)
      splits_[axis][part] =
          part < grid_[axis] ? split_axis(domain.shape[axis], grid_[axis], part).offset : domain.shape[axis];
  }
  connect(comm, comm);
}

namespace {

std::string splits_text(const std::vector<std::int64_t>& splits) {
  std::string text = "(";
  for (std::size_t i = 0; i < splits.size(); ++i) text += (i ? ", " : "") + std::to_string(splits[i]);
  return text + (splits.size() == 1 ? ",)" : ")");
}

// Row-major index of a process-grid position.
std::int64_t row_major(const std::array<int, 3>& position, const ProcessGrid& grid) {
  return (std::int64_t{position[0]} * grid[1] + position[1]) * grid[2] + position[2];
}

// A number that differs between ranks whose layouts differ (FNV-1a over every value),
// kept non-negative for agree_on_problems.
std::int64_t fingerprint(const Layout& layout) {
  std::uint64_t hash = 14695981039346656037ull;
  const auto mix = [&](std::int64_t value) { hash = (hash ^ static_cast<std::uint64_t>(value)) * 1099511628211ull; };
  for (const auto& splits : layout.splits) {
    mix(-1);
    for (const std::int64_t split : splits) mix(split);
  }
  for (const auto& position : layout.positions)
    for (const int coordinate : position) mix(coordinate);
  return static_cast<std::int64_t>(hash >> 1);
}

}  // namespace

Decomposition::Decomposition(MPI_Comm comm, const Domain& domain, const Layout& layout) : domain_(domain) {
  MPI_Comm_size(comm, &size_);
  int comm_rank = 0;
  MPI_Comm_rank(comm, &comm_rank);
  std::int64_t position_index = comm_rank;
  bool row_major_ranks = true;  // the same on every rank once the layouts agree
  const auto problem = find_problem([&] {
    domain.validate();
    for (int axis = 0; axis < 3; ++axis) {
      const auto& splits = layout.splits[axis];
      if (splits.size() < 2 || splits.front() != 0 || splits.back() != domain.shape[axis])
        throw ValueError(detail::concat("layout splits ", splits_text(splits), " of axis ", axis,
                                        " must run from 0 to the domain's extent ", domain.shape[axis],
                                        " on that axis (domain shape ", detail::tuple_text(domain.shape), ")"));
      for (std::size_t part = 0; part + 1 < splits.size(); ++part)
        if (splits[part + 1] <= splits[part])
          throw ValueError(detail::concat("layout splits ", splits_text(splits), " of axis ", axis,
                                          " must increase strictly (box ", part, " would hold ",
                                          splits[part + 1] - splits[part], " points)"));
      if (splits.size() - 1 > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        throw ValueError(detail::concat("layout splits of axis ", axis, " cut it into too many parts"));
      grid_[axis] = static_cast<int>(splits.size() - 1);
    }
    const std::int64_t processes = std::int64_t{grid_[0]} * grid_[1] * grid_[2];
    if (processes != size_)
      throw ValueError(detail::concat("layout process grid ", detail::tuple_text(grid_), " has ", processes,
                                      " processes but the communicator has ", size_, " ranks"));
    if (layout.positions.empty()) return;
    if (layout.positions.size() != static_cast<std::size_t>(size_))
      throw ValueError(detail::concat("layout positions has ", layout.positions.size(),
                                      " entries but the communicator has ", size_, " ranks (one position per rank)"));
    std::vector<int> holder(static_cast<std::size_t>(size_), -1);
    for (int rank = 0; rank < size_; ++rank) {
      const auto& position = layout.positions[rank];
      for (int axis = 0; axis < 3; ++axis)
        if (position[axis] < 0 || position[axis] >= grid_[axis])
          throw ValueError(detail::concat("layout position ", detail::tuple_text(position), " of rank ", rank,
                                          " lies outside the process grid ", detail::tuple_text(grid_)));
      const auto index = static_cast<std::size_t>(row_major(position, grid_));
      if (holder[index] >= 0)
        throw ValueError(detail::concat("layout position ", detail::tuple_text(position), " is given to both rank ",
                                        holder[index], " and rank ", rank));
      holder[index] = rank;
      row_major_ranks = row_major_ranks && static_cast<int>(index) == rank;
    }
    position_index = row_major(layout.positions[comm_rank], grid_);
  });
  std::string setting = domain_text(domain) + ", layout splits ";
  for (int axis = 0; axis < 3; ++axis) setting += (axis ? ", " : "") + splits_text(layout.splits[axis]);
  // The positions (one per rank) only by fingerprint: the setting of every rank is
  // gathered when they differ.
  setting += layout.positions.empty()
                 ? std::string(", row-major positions")
                 : detail::concat(", explicit positions (layout fingerprint ", fingerprint(layout), ")");
  agree_on_setting(comm, problem, setting, "domain and layout");
  splits_ = layout.splits;
  if (row_major_ranks) {
    connect(comm, comm);
    return;
  }
  // MPI_Cart_create numbers ranks row-major, so the ranks are first put in that order.
  MPI_Comm ordered = MPI_COMM_NULL;
  MPI_Comm_split(comm, 0, static_cast<int>(position_index), &ordered);
  connect(ordered, comm);
  MPI_Comm_free(&ordered);
}

void Decomposition::connect(MPI_Comm ordered, MPI_Comm caller) {
  int dims[3] = {grid_[0], grid_[1], grid_[2]};
  int periods[3] = {domain_.periodic[0], domain_.periodic[1], domain_.periodic[2]};
  // reorder = 0: MPICH and Open MPI ignore it anyway; mapping reorders ranks itself.
  MPI_Cart_create(ordered, 3, dims, periods, 0, &cart_);
  MPI_Comm_rank(cart_, &rank_);
  // Asked of MPI, not inferred from the layout: whatever order the Cartesian communicator
  // has, errors name the caller's ranks.
  MPI_Group cartesian = MPI_GROUP_NULL, given = MPI_GROUP_NULL;
  MPI_Comm_group(cart_, &cartesian);
  MPI_Comm_group(caller, &given);
  std::vector<int> ranks(static_cast<std::size_t>(size_));
  std::iota(ranks.begin(), ranks.end(), 0);
  caller_ranks_.resize(ranks.size());
  MPI_Group_translate_ranks(cartesian, size_, ranks.data(), given, caller_ranks_.data());
  MPI_Group_free(&given);
  MPI_Group_free(&cartesian);
  local_box_ = box(rank_);
  for (int axis = 0; axis < 3; ++axis) MPI_Cart_shift(cart_, axis, 1, &neighbours_[axis][0], &neighbours_[axis][1]);
}

Decomposition::~Decomposition() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && cart_ != MPI_COMM_NULL) MPI_Comm_free(&cart_);
}

std::array<int, 3> Decomposition::coords(int rank) const {
  if (rank < 0 || rank >= size_)
    throw ValueError(detail::concat("rank ", rank, " is out of range for ", size_, " ranks"));
  std::array<int, 3> result{};
  MPI_Cart_coords(cart_, rank, 3, result.data());
  return result;
}

int Decomposition::neighbour(const std::array<int, 3>& direction) const {
  std::array<int, 3> at = coords(rank_);
  for (int axis = 0; axis < 3; ++axis) {
    at[axis] += direction[axis];
    if (at[axis] < 0 || at[axis] >= grid_[axis]) {
      if (!domain_.periodic[axis]) return MPI_PROC_NULL;
      at[axis] = (at[axis] + grid_[axis]) % grid_[axis];
    }
  }
  int result = MPI_PROC_NULL;
  MPI_Cart_rank(cart_, at.data(), &result);
  return result;
}

Box Decomposition::box(int rank) const {
  const auto c = coords(rank);
  Box result;
  for (int axis = 0; axis < 3; ++axis) {
    const auto& splits = splits_[axis];
    result.offset[axis] = splits[c[axis]];
    result.extent[axis] = splits[c[axis] + 1] - splits[c[axis]];
  }
  return result;
}

}  // namespace hybridfd
