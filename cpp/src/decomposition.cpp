#include "hybridfd/decomposition.hpp"

#include <limits>

#include "format.hpp"
#include "hybridfd/errors.hpp"

namespace hybridfd {

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
  agree_on_problems(comm, problem);

  int dims[3] = {grid_[0], grid_[1], grid_[2]};
  int periods[3] = {domain.periodic[0], domain.periodic[1], domain.periodic[2]};
  // reorder = 0: MPICH and Open MPI ignore it anyway; mapping reorders ranks itself.
  MPI_Cart_create(comm, 3, dims, periods, 0, &cart_);
  MPI_Comm_rank(cart_, &rank_);
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

Box Decomposition::box(int rank) const {
  const auto c = coords(rank);
  Box result;
  for (int axis = 0; axis < 3; ++axis) {
    const auto part = split_axis(domain_.shape[axis], grid_[axis], c[axis]);
    result.offset[axis] = part.offset;
    result.extent[axis] = part.extent;
  }
  return result;
}

}  // namespace hybridfd
