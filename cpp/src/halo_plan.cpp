#include "hybridfd/halo_plan.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "hybridfd/errors.hpp"

namespace hybridfd {

namespace {

// Tags of the 26 directions by (s0+1)*9 + (s1+1)*3 + (s2+1) (13, the box itself: -1), and
// back.
struct DirectionTable {
  std::array<int, 27> tag{};
  std::array<Offset, halo_directions> direction{};
  constexpr DirectionTable() {
    int next = 6;
    for (int code = 0; code < 27; ++code) {
      const Offset s{code / 9 - 1, code / 3 % 3 - 1, code % 3 - 1};
      const int moves = (s[0] != 0) + (s[1] != 0) + (s[2] != 0);
      int t = -1;
      if (moves == 1) {
        const int axis = s[0] != 0 ? 0 : s[1] != 0 ? 1 : 2;
        t = 2 * axis + (s[axis] > 0 ? 1 : 0);
      } else if (moves > 1) {
        t = next++;
      }
      tag[static_cast<std::size_t>(code)] = t;
      if (t >= 0) direction[static_cast<std::size_t>(t)] = s;
    }
  }
};
constexpr DirectionTable direction_table;

int code_of(const Offset& s) { return (s[0] + 1) * 9 + (s[1] + 1) * 3 + (s[2] + 1); }

Offset opposite_of(const Offset& s) { return {-s[0], -s[1], -s[2]}; }

}  // namespace

int direction_tag(const Offset& direction) {
  for (const int component : direction)
    if (component < -1 || component > 1) throw std::logic_error("halo direction components must be -1, 0 or 1");
  const int tag = direction_table.tag[static_cast<std::size_t>(code_of(direction))];
  if (tag < 0) throw std::logic_error("the box itself is no halo direction");
  return tag;
}

Offset tag_direction(int tag) { return direction_table.direction.at(static_cast<std::size_t>(tag)); }

DirectionSet directions_read_by(const Stencil& stencil) {
  DirectionSet result = 0;
  for (int tag = 0; tag < halo_directions; ++tag) {
    const Offset s = tag_direction(tag);
    if (stencil.reads_direction(s) || stencil.reads_direction(opposite_of(s))) result |= DirectionSet{1} << tag;
  }
  return result;
}

DirectionSet directions_ending_on(unsigned axes) {
  DirectionSet result = 0;
  for (int tag = 0; tag < halo_directions; ++tag) {
    const Offset s = tag_direction(tag);
    const int last = s[2] != 0 ? 2 : s[1] != 0 ? 1 : 0;
    if (axes & (1u << last)) result |= DirectionSet{1} << tag;
  }
  return result;
}

int Face::axis() const {
  const int moves = (direction[0] != 0) + (direction[1] != 0) + (direction[2] != 0);
  if (moves != 1) return -1;
  return direction[0] != 0 ? 0 : direction[1] != 0 ? 1 : 2;
}

template <class Neighbour, class Crosses>
HaloPlan::HaloPlan(const Index3& extent, const Offset& widths, DirectionSet directions, int lanes_per_point,
                   Neighbour&& neighbour, Crosses&& crosses)
    : radius_(std::max({widths[0], widths[1], widths[2]})),
      widths_(widths),
      directions_(directions),
      lanes_per_point_(lanes_per_point),
      extent_(extent) {
  for (int axis = 0; axis < 3; ++axis) padded_[axis] = extent_[axis] + 2 * widths_[axis];
  for (int tag = 0; tag < halo_directions; ++tag) {
    if (!(directions & (DirectionSet{1} << tag))) continue;
    Face face;
    face.direction = tag_direction(tag);
    face.neighbour = neighbour(face.direction);
    for (int axis = 0; axis < 3; ++axis) {
      const std::int64_t w = widths_[axis], n = extent_[axis];
      const int s = face.direction[axis];
      if (s != 0 && w == 0) throw std::logic_error("halo plan: a direction along an axis of no ghost layers");
      // Along a moving axis, lower: send interior layers [w, 2w), fill ghosts [0, w);
      // upper: send [n, n+w), fill [n+w, n+2w). Along the others: the box, [w, w+n).
      face.send.begin[axis] = s < 0 ? w : s > 0 ? n : w;
      face.ghost.begin[axis] = s < 0 ? 0 : s > 0 ? n + w : w;
      face.send.extent[axis] = face.ghost.extent[axis] = s != 0 ? w : n;
      face.across_boundary[axis] = s != 0 && face.neighbour != MPI_PROC_NULL && crosses(face.direction, axis);
    }
    face.lanes = face.send.points() * lanes_per_point_;
    // The ghosts in direction s are filled by a message travelling the other way.
    face.send_tag = tag;
    face.receive_tag = direction_tag(opposite_of(face.direction));
    faces_.push_back(face);
  }
  for (const Face& face : faces_) {
    const auto match = std::find_if(faces_.begin(), faces_.end(),
                                    [&](const Face& other) { return other.direction == opposite_of(face.direction); });
    if (match == faces_.end()) throw std::logic_error("halo plan: a direction without its opposite");
    opposite_.push_back(static_cast<std::size_t>(match - faces_.begin()));
  }
  // What lets all-dims post every message at once: a message reads only interior points
  // and fills only its own ghost block, outside the interior along exactly its moving
  // axes. So no exchange reads what another writes. (A face with no neighbour moves
  // nothing; its axis may be thinner than its width.)
  for (const Face& face : faces_)
    for (int axis = 0; axis < 3 && face.neighbour != MPI_PROC_NULL; ++axis) {
      const std::int64_t w = widths_[axis];
      const bool send_inside =
          face.send.begin[axis] >= w && face.send.begin[axis] + face.send.extent[axis] <= w + extent_[axis];
      const bool ghost_inside =
          face.ghost.begin[axis] >= w && face.ghost.begin[axis] + face.ghost.extent[axis] <= w + extent_[axis];
      if (!send_inside || ghost_inside != (face.direction[axis] == 0))
        throw std::logic_error("halo plan: a block reaches outside its part of the box");
    }
}

namespace {

// A direction's ghosts cross the periodic boundary along an axis where the box touches
// the domain's edge on that side.
auto crosses_of(const Decomposition& decomposition) {
  return [&decomposition, coords = decomposition.coords(decomposition.rank())](const Offset& s, int axis) {
    if (!decomposition.domain().periodic[axis]) return false;
    return s[axis] < 0 ? coords[axis] == 0 : coords[axis] == decomposition.grid()[axis] - 1;
  };
}

}  // namespace

HaloPlan::HaloPlan(const Decomposition& decomposition, const Offset& widths, DirectionSet directions)
    : HaloPlan(
          decomposition.local_box().extent, widths, directions, hybridfd::lanes_per_point(decomposition.domain().dtype),
          [&](const Offset& s) { return decomposition.neighbour(s); }, crosses_of(decomposition)) {}

HaloPlan::HaloPlan(const Decomposition& decomposition, int radius)
    : HaloPlan(decomposition, Offset{radius, radius, radius}, face_directions) {}

HaloPlan::HaloPlan(const Decomposition& decomposition, const Stencil& stencil)
    : HaloPlan(decomposition, stencil.widths(), directions_read_by(stencil)) {}

HaloPlan::HaloPlan(const Index3& extent, int radius, int lanes_per_point)
    : HaloPlan(
          extent, Offset{radius, radius, radius}, face_directions, lanes_per_point,
          [](const Offset&) { return MPI_PROC_NULL; }, [](const Offset&, int) { return false; }) {}

HaloPlan::HaloPlan(const Index3& extent, const Stencil& stencil, int lanes_per_point)
    : HaloPlan(
          extent, stencil.widths(), directions_read_by(stencil), lanes_per_point,
          [](const Offset&) { return MPI_PROC_NULL; }, [](const Offset&, int) { return false; }) {}

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
  if (grids_padded_) return copy_region<true>(face.send, padded_, const_cast<double*>(grid), buffer);
  Region in_grid = face.send;  // padded coordinates -> the unpadded grid's
  for (int axis = 0; axis < 3; ++axis) in_grid.begin[axis] -= widths_[axis];
  copy_region<true>(in_grid, extent_, const_cast<double*>(grid), buffer);
}

namespace {

// (p_re + i p_im)(a_re + i a_im), each product and sum rounded on its own (no FMA:
// -ffp-contract=off), the order of C's and numpy's complex multiply; a face crossing
// several boundaries takes their factors one at a time, x's first.
inline void times_phases(const Face& face, double& re, double& im) {
  for (const std::complex<double>& phase : face.phases) {
    if (phase == std::complex<double>{1.0, 0.0}) continue;
    const double p_re = phase.real(), p_im = phase.imag();
    const double new_re = p_re * re - p_im * im;
    im = p_re * im + p_im * re;
    re = new_re;
  }
}

// Copies a face's `region` from rows `from` to rows `to`, times the face's phases if it
// has any.
void copy_face_rows(const Face& face, const Region& region, std::int64_t lanes, Rows from, Rows to) {
  if (!face.phased) return copy_rows(region.extent[0], region.extent[1], region.extent[2] * lanes, from, to);
  for (std::int64_t x = 0; x < region.extent[0]; ++x)
    for (std::int64_t y = 0; y < region.extent[1]; ++y) {
      const double* in = from.first + x * from.stride_x + y * from.stride_y;
      double* row = const_cast<double*>(to.first) + x * to.stride_x + y * to.stride_y;
      for (std::int64_t z = 0; z < region.extent[2]; ++z) {
        double re = in[2 * z], im = in[2 * z + 1];
        times_phases(face, re, im);
        row[2 * z] = re, row[2 * z + 1] = im;
      }
    }
}

}  // namespace

void HaloPlan::apply_phase(const Face& face, double* buffer, std::int64_t grids) const {
  const std::int64_t points = face.lanes / 2 * grids;
  for (std::int64_t point = 0; point < points; ++point) times_phases(face, buffer[2 * point], buffer[2 * point + 1]);
}

void HaloPlan::ghosts_from_grid(const Face& face, const Face& source, const double* grid, double* buffer) const {
  const std::int64_t lanes = lanes_per_point_;
  const std::int64_t from_y = extent_[2] * lanes, from_x = extent_[1] * from_y;
  const Region& region = face.ghost;
  const Index3 begin{source.send.begin[0] - widths_[0], source.send.begin[1] - widths_[1],
                     source.send.begin[2] - widths_[2]};
  const std::int64_t row_lanes = region.extent[2] * lanes;
  copy_face_rows(face, region, lanes, {grid + begin[0] * from_x + begin[1] * from_y + begin[2] * lanes, from_x, from_y},
                 {buffer, region.extent[1] * row_lanes, row_lanes});
}

namespace {

Rows padded_rows(const Region& region, const Index3& padded, std::int64_t lanes, const double* grid) {
  const std::int64_t stride_y = padded[2] * lanes, stride_x = padded[1] * stride_y;
  return {grid + region.begin[0] * stride_x + region.begin[1] * stride_y + region.begin[2] * lanes, stride_x, stride_y};
}

}  // namespace

void HaloPlan::unpack(const Face& face, const double* message, double* padded) const {
  const Region& region = face.ghost;
  const std::int64_t row_lanes = region.extent[2] * lanes_per_point_;
  copy_face_rows(face, region, lanes_per_point_, {message, region.extent[1] * row_lanes, row_lanes},
                 padded_rows(region, padded_, lanes_per_point_, padded));
}

void HaloPlan::ghosts_in_place(const Face& face, const Face& source, double* padded) const {
  copy_face_rows(face, face.ghost, lanes_per_point_, padded_rows(source.send, padded_, lanes_per_point_, padded),
                 padded_rows(face.ghost, padded_, lanes_per_point_, padded));
}

void HaloPlan::zero_ghosts(const Face& face, double* padded) const {
  const Region& region = face.ghost;
  const Rows rows = padded_rows(region, padded_, lanes_per_point_, padded);
  const auto bytes = static_cast<std::size_t>(region.extent[2] * lanes_per_point_) * sizeof(double);
  for (std::int64_t x = 0; x < region.extent[0]; ++x)
    for (std::int64_t y = 0; y < region.extent[1]; ++y) std::memset(const_cast<double*>(rows.at(x, y)), 0, bytes);
}

void HaloPlan::set_phases(const BlochPhases* phases) {
  if (phases && lanes_per_point_ != 2)
    throw TypeError("Bloch phases need complex128 grids; a phase factor cannot multiply float64 ghosts");
  for (Face& face : faces_) {
    face.phased = false;
    for (int axis = 0; axis < 3; ++axis) {
      const int side = face.direction[axis] > 0 ? 1 : 0;
      face.phases[axis] = phases && face.across_boundary[axis] ? (*phases)[axis][side] : std::complex<double>{1.0, 0.0};
      face.phased = face.phased || face.phases[axis] != std::complex<double>{1.0, 0.0};
    }
  }
}

}  // namespace hybridfd
