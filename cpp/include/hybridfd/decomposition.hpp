// Decomposition: the process grid and each rank's box (GPAW journal, Sect. 4: every
// rank owns the same sub-box of every grid; automatic grid minimises total surface).
#pragma once

#include <mpi.h>

#include <array>
#include <optional>
#include <vector>

#include "hybridfd/domain.hpp"

namespace hybridfd {

using ProcessGrid = std::array<int, 3>;

struct Box {
  Index3 offset{};
  Index3 extent{};
};

// Split n points over p parts: part i gets n/p points, plus one if i < n % p, so
// extents differ by at most one and the larger ones come first.
struct AxisPart {
  std::int64_t offset;
  std::int64_t extent;
};
AxisPart split_axis(std::int64_t points, int parts, int part);

// Total surface of all sub-boxes when `shape` is cut by `grid`, in grid points:
// 2*(Px*Ny*Nz + Py*Nx*Nz + Pz*Nx*Ny). Exact for uneven splits too.
std::int64_t total_surface(const Index3& shape, const ProcessGrid& grid);

// The factorisation Px*Py*Pz = ranks with Pa <= Na minimising total_surface; ties go
// to the lexicographically largest (Px, Py, Pz), i.e. x is cut first as in GPAW.
// Throws ValueError if no factorisation fits (more ranks than grid points).
ProcessGrid automatic_grid(const Index3& shape, int ranks);

// An explicit layout, for matching a decomposition made elsewhere (GPAW's, say):
// where each axis is cut and which rank holds which box.
struct Layout {
  // splits[axis] = {0, s1, ..., N}: box i along the axis spans [splits[i], splits[i+1]),
  // so the process grid is (splits[0].size()-1, ...). Boxes may differ by any amount.
  std::array<std::vector<std::int64_t>, 3> splits;
  // positions[rank] = the process-grid coordinates of that rank of the communicator.
  // Empty: row-major, rank = (px*Py + py)*Pz + pz (MPI_Cart_create's order and GPAW's).
  std::vector<std::array<int, 3>> positions;
};

class Decomposition {
 public:
  // Collective over comm. Builds a Cartesian communicator (periodic where the domain
  // is). Throws ValueError on every rank for a grid whose product is not the number of
  // ranks, a non-positive entry, an axis cut into more parts than it has points, or a
  // domain or grid that differs between ranks.
  Decomposition(MPI_Comm comm, const Domain& domain, std::optional<ProcessGrid> grid = std::nullopt);
  // Collective over comm: the boxes and rank order of `layout`. Throws ValueError on every
  // rank, naming the value, for splits that do not run strictly upwards from 0 to the
  // axis's extent, a grid whose product is not the number of ranks, positions that are
  // not one per rank, outside the grid or repeated, or a domain or layout that differs
  // between ranks. The Cartesian communicator's rank r is the box at row-major position r: with
  // positions, the ranks of comm are renumbered to get there.
  Decomposition(MPI_Comm comm, const Domain& domain, const Layout& layout);
  ~Decomposition();
  Decomposition(const Decomposition&) = delete;
  Decomposition& operator=(const Decomposition&) = delete;

  const Domain& domain() const { return domain_; }
  const ProcessGrid& grid() const { return grid_; }
  // The Cartesian communicator all halo messages use.
  MPI_Comm communicator() const { return cart_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // caller_ranks()[r]: the rank, in the communicator given to the constructor, of rank r
  // of communicator(). Layout::positions renumber the ranks; errors about this
  // decomposition (and the operators on it) name ranks by this, so they name the caller's.
  const std::vector<int>& caller_ranks() const { return caller_ranks_; }

  // Where each axis is cut (see Layout::splits).
  const std::array<std::vector<std::int64_t>, 3>& splits() const { return splits_; }
  std::array<int, 3> coords(int rank) const;
  Box box(int rank) const;
  const Box& local_box() const { return local_box_; }
  // Neighbour ranks along an axis, {lower, upper}; MPI_PROC_NULL at a non-periodic edge.
  std::array<int, 2> neighbours(int axis) const { return neighbours_[axis]; }
  // The rank whose box lies next to this rank's in `direction` (each component -1, 0 or
  // 1): an edge or corner neighbour when two or three components move. MPI_PROC_NULL
  // where the direction leaves the domain along a non-periodic axis.
  int neighbour(const std::array<int, 3>& direction) const;

 private:
  // Creates the Cartesian communicator from `ordered` (comm's ranks already in row-major
  // order) and names its ranks by their ranks in `caller`.
  void connect(MPI_Comm ordered, MPI_Comm caller);

  Domain domain_;
  ProcessGrid grid_{};
  std::array<std::vector<std::int64_t>, 3> splits_;
  MPI_Comm cart_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> caller_ranks_;
  Box local_box_;
  std::array<std::array<int, 2>, 3> neighbours_{};
};

}  // namespace hybridfd
