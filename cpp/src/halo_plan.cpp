#include "hybridfd/halo_plan.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "hybridfd/errors.hpp"

namespace hybridfd {

namespace {

std::array<std::array<int, 2>, 3> neighbours_of(const Decomposition& decomposition) {
  return {decomposition.neighbours(0), decomposition.neighbours(1), decomposition.neighbours(2)};
}

// A face's ghosts cross the periodic boundary where the box touches the domain's edge.
std::array<std::array<bool, 2>, 3> across_boundary_of(const Decomposition& decomposition) {
  const auto coords = decomposition.coords(decomposition.rank());
  std::array<std::array<bool, 2>, 3> result{};
  for (int axis = 0; axis < 3; ++axis) {
    const bool periodic = decomposition.domain().periodic[axis];
    result[axis] = {periodic && coords[axis] == 0, periodic && coords[axis] == decomposition.grid()[axis] - 1};
  }
  return result;
}

}  // namespace

HaloPlan::HaloPlan(const Decomposition& decomposition, int radius)
    : HaloPlan(decomposition.local_box().extent, radius, hybridfd::lanes_per_point(decomposition.domain().dtype),
               neighbours_of(decomposition), across_boundary_of(decomposition)) {}

HaloPlan::HaloPlan(const Index3& extent, int radius, int lanes_per_point)
    : HaloPlan(extent, radius, lanes_per_point,
               {{{MPI_PROC_NULL, MPI_PROC_NULL}, {MPI_PROC_NULL, MPI_PROC_NULL}, {MPI_PROC_NULL, MPI_PROC_NULL}}}) {}

HaloPlan::HaloPlan(const Index3& extent, int radius, int lanes_per_point,
                   const std::array<std::array<int, 2>, 3>& neighbours,
                   const std::array<std::array<bool, 2>, 3>& across_boundary)
    : radius_(radius), lanes_per_point_(lanes_per_point), extent_(extent) {
  for (int axis = 0; axis < 3; ++axis) padded_[axis] = extent_[axis] + 2 * radius;
  for (int axis = 0; axis < 3; ++axis) {
    for (int side = 0; side < 2; ++side) {
      Face& face = faces_[2 * axis + side];
      face.axis = axis;
      face.side = side;
      face.neighbour = neighbours[axis][side];
      face.across_boundary = across_boundary[axis][side] && face.neighbour != MPI_PROC_NULL;
      for (int other = 0; other < 3; ++other) {
        face.send.begin[other] = face.ghost.begin[other] = radius;
        face.send.extent[other] = face.ghost.extent[other] = extent_[other];
      }
      face.send.extent[axis] = face.ghost.extent[axis] = radius;
      // lower: send interior planes [r, 2r), fill ghosts [0, r)
      // upper: send interior planes [n, n+r), fill ghosts [n+r, n+2r)
      face.send.begin[axis] = side == 0 ? radius : extent_[axis];
      face.ghost.begin[axis] = side == 0 ? 0 : extent_[axis] + radius;
      face.lanes = face.send.points() * lanes_per_point_;
      // Tag = 2*axis + (1 if the message travels towards the upper neighbour). The
      // lower ghosts are filled by a message travelling up, and vice versa.
      face.send_tag = 2 * axis + side;
      face.receive_tag = 2 * axis + (1 - side);
    }
  }
  // What lets all-dims post every axis at once: a face reads only interior points and
  // fills only its own ghost slab, which lies outside the interior along its axis alone
  // (a star stencil needs no edge or corner ghosts). So no exchange reads what another
  // writes. (A face with no neighbour moves nothing; its axis may be thinner than r.)
  for (const Face& face : faces_)
    for (int axis = 0; axis < 3 && face.neighbour != MPI_PROC_NULL; ++axis) {
      const bool send_inside =
          face.send.begin[axis] >= radius && face.send.begin[axis] + face.send.extent[axis] <= radius + extent_[axis];
      const bool ghost_inside = face.ghost.begin[axis] >= radius &&
                                face.ghost.begin[axis] + face.ghost.extent[axis] <= radius + extent_[axis];
      if (!send_inside || ghost_inside != (axis != face.axis))
        throw std::logic_error("halo plan: a face reaches outside its cross-section of the box");
    }
}

std::int64_t HaloPlan::max_face_lanes() const {
  std::int64_t result = 0;
  for (const Face& face : faces_) result = std::max(result, face.lanes);
  return result;
}

namespace {

// Copies `planes` x `rows` rows of `row_lanes` lanes from one block to another. A z
// face's rows are only r points long (16 bytes for r = 2, float64): a library memcpy call
// per row costs several times the copy itself (it made packing and unpacking cost more
// than the stencil on 24^3 grids), so short rows are copied by moves whose size the
// compiler knows.
template <std::int64_t RowLanes>
void copy_rows_of(std::int64_t planes, std::int64_t rows, std::int64_t row_lanes, Rows from, Rows to) {
  const std::size_t bytes = static_cast<std::size_t>(RowLanes > 0 ? RowLanes : row_lanes) * sizeof(double);
  for (std::int64_t x = 0; x < planes; ++x)
    for (std::int64_t y = 0; y < rows; ++y)
      std::memcpy(const_cast<double*>(to.first) + x * to.stride_x + y * to.stride_y,
                  from.first + x * from.stride_x + y * from.stride_y, RowLanes > 0 ? RowLanes * sizeof(double) : bytes);
}

void copy_rows(std::int64_t planes, std::int64_t rows, std::int64_t row_lanes, Rows from, Rows to) {
  // Rows of z faces: r points of 1 or 2 lanes, r = 1..6.
  switch (row_lanes) {
    case 1: return copy_rows_of<1>(planes, rows, row_lanes, from, to);
    case 2: return copy_rows_of<2>(planes, rows, row_lanes, from, to);
    case 3: return copy_rows_of<3>(planes, rows, row_lanes, from, to);
    case 4: return copy_rows_of<4>(planes, rows, row_lanes, from, to);
    case 5: return copy_rows_of<5>(planes, rows, row_lanes, from, to);
    case 6: return copy_rows_of<6>(planes, rows, row_lanes, from, to);
    case 8: return copy_rows_of<8>(planes, rows, row_lanes, from, to);
    case 10: return copy_rows_of<10>(planes, rows, row_lanes, from, to);
    case 12: return copy_rows_of<12>(planes, rows, row_lanes, from, to);
    default: return copy_rows_of<0>(planes, rows, row_lanes, from, to);
  }
}

}  // namespace

template <bool ToBuffer>
void HaloPlan::copy_region(const Region& region, const Index3& array_extent, double* array, double* buffer) const {
  const std::int64_t lanes = lanes_per_point_;
  const std::int64_t stride_y = array_extent[2] * lanes;
  const std::int64_t stride_x = array_extent[1] * stride_y;
  const std::int64_t row_lanes = region.extent[2] * lanes;
  const Rows in_array{array + region.begin[0] * stride_x + region.begin[1] * stride_y + region.begin[2] * lanes,
                      stride_x, stride_y};
  const Rows in_buffer{buffer, region.extent[1] * row_lanes, row_lanes};
  copy_rows(region.extent[0], region.extent[1], row_lanes, ToBuffer ? in_array : in_buffer,
            ToBuffer ? in_buffer : in_array);
}

namespace {
PackCharge pack_charge = nullptr;
}  // namespace

void set_pack_charge(PackCharge charge) { pack_charge = charge; }

void charge_packing(std::int64_t lanes) {
  if (pack_charge != nullptr) [[unlikely]]
    pack_charge(lanes);
}

void HaloPlan::pack(const Face& face, const double* grid, double* buffer) const {
  Region in_grid = face.send;  // padded coordinates -> the unpadded grid's
  for (int axis = 0; axis < 3; ++axis) in_grid.begin[axis] -= radius_;
  copy_region<true>(in_grid, extent_, const_cast<double*>(grid), buffer);
}

namespace {

// Copies a face's `region` from rows `from` to rows `to`, times the face's phase if it has
// one: (p_re + i p_im)(a_re + i a_im), each product and sum rounded on its own (no
// FMA: -ffp-contract=off), the order of C's and numpy's complex multiply.
void copy_face_rows(const Face& face, const Region& region, std::int64_t lanes, Rows from, Rows to) {
  if (!face.phased) return copy_rows(region.extent[0], region.extent[1], region.extent[2] * lanes, from, to);
  const double p_re = face.phase.real(), p_im = face.phase.imag();
  for (std::int64_t x = 0; x < region.extent[0]; ++x)
    for (std::int64_t y = 0; y < region.extent[1]; ++y) {
      const double* in = from.first + x * from.stride_x + y * from.stride_y;
      double* row = const_cast<double*>(to.first) + x * to.stride_x + y * to.stride_y;
      for (std::int64_t z = 0; z < region.extent[2]; ++z) {
        row[2 * z] = p_re * in[2 * z] - p_im * in[2 * z + 1];
        row[2 * z + 1] = p_re * in[2 * z + 1] + p_im * in[2 * z];
      }
    }
}

}  // namespace

void HaloPlan::apply_phase(const Face& face, double* buffer, std::int64_t grids) const {
  const double p_re = face.phase.real(), p_im = face.phase.imag();
  const std::int64_t points = face.lanes / 2 * grids;
  for (std::int64_t point = 0; point < points; ++point) {
    const double re = buffer[2 * point], im = buffer[2 * point + 1];
    buffer[2 * point] = p_re * re - p_im * im;
    buffer[2 * point + 1] = p_re * im + p_im * re;
  }
}

void HaloPlan::ghosts_from_grid(const Face& face, const Face& source, const double* grid, double* buffer) const {
  const std::int64_t lanes = lanes_per_point_;
  const std::int64_t from_y = extent_[2] * lanes, from_x = extent_[1] * from_y;
  const Region& region = face.ghost;
  const Index3 begin{source.send.begin[0] - radius_, source.send.begin[1] - radius_, source.send.begin[2] - radius_};
  const std::int64_t row_lanes = region.extent[2] * lanes;
  copy_face_rows(face, region, lanes, {grid + begin[0] * from_x + begin[1] * from_y + begin[2] * lanes, from_x, from_y},
                 {buffer, region.extent[1] * row_lanes, row_lanes});
}

void HaloPlan::set_phases(const BlochPhases* phases) {
  if (phases && lanes_per_point_ != 2)
    throw TypeError("Bloch phases need complex128 grids; a phase factor cannot multiply float64 ghosts");
  for (Face& face : faces_) {
    face.phase = phases && face.across_boundary ? (*phases)[face.axis][face.side] : std::complex<double>{1.0, 0.0};
    face.phased = face.phase != std::complex<double>{1.0, 0.0};
  }
}

}  // namespace hybridfd
