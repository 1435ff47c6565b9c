// HaloPlan: the messages of one box's halo for a stencil (GPAW journal, Sect. 4.1: a
// rank needs its neighbours' surface points to compute its own surface points).
//
// All sizes are in float64 lanes (a complex128 point is 2 lanes). Regions are given in
// the coordinates of the box padded by w_a on both sides of each axis a, (nx+2wx, ny+2wy,
// (nz+2wz)*lanes), with the box at [w, w+n) (no grid is held padded in an apply: the
// kernel reads ghosts where they are, kernel.hpp). The halo is cut into blocks by
// direction s (each component -1, 0 or 1): along an axis with s_a = 0 a block spans the
// box, otherwise the w_a layers beyond its side. A star stencil reads only the six faces
// (one moving axis), so exchanges along different axes are independent (what lets later
// schedules post all dimensions at once). A stencil with offsets along diagonals reads
// edge and corner blocks too; each comes in a message of its own straight from the
// neighbour that owns it (up to 26 neighbours), not relayed through the face neighbours
// in stages: so the messages stay independent and every schedule may post them in any
// order, and no message carries ghosts another message brought. Only the directions the
// stencil reads are exchanged (and their opposites: a neighbour must send what this rank
// reads, so both ends exchange the same set); a star stencil keeps six messages.
//
// Bloch-periodic boundaries (GPAW's k-points, its apply(in, out, phase_cd)): a ghost
// block filled across the domain's periodic boundary holds the neighbour's points times
// a phase factor per boundary crossed, applied here (apply_phase on a received block,
// ghosts_from_grid for a rank that is its own neighbour), one factor at a time in axis
// order x, y, z, each complex multiply rounded on its own, so every schedule, transport
// and model gets it, and the numpy reference pads axis by axis in the same order.
#pragma once

#include <array>
#include <complex>
#include <cstdint>
#include <span>
#include <vector>

#include "hybridfd/decomposition.hpp"
#include "hybridfd/stencil.hpp"

namespace hybridfd {

// Halo directions as message tags (a tag names the direction a message travels): the six
// faces first, 2*axis + (1 if towards the upper side), the tags star stencils' messages
// have always had; then the 12 edges and 8 corners, in order of (s0+1)*9 + (s1+1)*3 +
// (s2+1).
inline constexpr int halo_directions = 26;
using DirectionSet = std::uint32_t;  // bit t: the direction of tag t
inline constexpr DirectionSet face_directions = 0b111111;
inline constexpr DirectionSet every_direction = (DirectionSet{1} << halo_directions) - 1;
int direction_tag(const Offset& direction);
Offset tag_direction(int tag);
// The directions `stencil` reads and their opposites (see above).
DirectionSet directions_read_by(const Stencil& stencil);
// The directions that move along at least one of `axes` (bit a: axis a) and along none
// after the last of them: the directions a schedule that exchanges axis by axis (x, then
// y, then z) sends with the last one.
DirectionSet directions_ending_on(unsigned axes);

// A box-shaped set of points inside a padded grid, in points (not lanes).
struct Region {
  Index3 begin{};
  Index3 extent{};
  std::int64_t points() const { return extent[0] * extent[1] * extent[2]; }
};

// A block of rows of lanes in an array: row (x, y) starts at first + x*stride_x +
// y*stride_y. A contiguous buffer is a block whose rows follow one another; strides of 0
// make every row the same one (a row of zeros).
struct Rows {
  const double* first = nullptr;
  std::int64_t stride_x = 0;
  std::int64_t stride_y = 0;
  const double* at(std::int64_t x, std::int64_t y) const { return first + x * stride_x + y * stride_y; }
};

// One message each way between this rank and its neighbour in one direction (a face,
// an edge or a corner of the halo).
struct Face {
  Offset direction{};                     // towards the neighbour; one moving axis for a face
  int neighbour = MPI_PROC_NULL;          // rank in the Cartesian communicator
  Region send;                            // the surface points this rank sends that way
  Region ghost;                           // the ghost block filled from that neighbour
  std::int64_t lanes = 0;                 // float64 lanes per grid in either region
  int send_tag = 0;                       // tags name the direction of travel, so that two
  int receive_tag = 0;                    // messages between the same pair never mix up
  std::array<bool, 3> across_boundary{};  // per axis: the ghosts cross the domain's periodic boundary there
  bool phased = false;                    // this apply multiplies them by `phases` (complex only)
  std::array<std::complex<double>, 3> phases{{{1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}}};  // per axis crossed
  // The face's axis if it moves along one only, else -1.
  int axis() const;
};

// Per axis and side of the whole domain: the factor for ghost values that come across
// that periodic boundary (side 1: points wrapped from the lower end to beyond the upper
// end; a Bloch wave with k-point k_c has e^{2 pi i k_c} there and its inverse at side 0).
using BlochPhases = std::array<std::array<std::complex<double>, 2>, 3>;

class HaloPlan {
 public:
  // The halo of `widths` ghost layers per axis in `directions` (closed under opposites).
  HaloPlan(const Decomposition& decomposition, const Offset& widths, DirectionSet directions);
  // A star stencil's: r layers, six faces.
  HaloPlan(const Decomposition& decomposition, int radius);
  // What `stencil` reads (Stencil::widths, directions_read_by).
  HaloPlan(const Decomposition& decomposition, const Stencil& stencil);
  // A box with no neighbours (every face MPI_PROC_NULL), for using the kernel alone.
  HaloPlan(const Index3& extent, int radius, int lanes_per_point);
  HaloPlan(const Index3& extent, const Stencil& stencil, int lanes_per_point);

  // The largest width: r for a star stencil.
  int radius() const { return radius_; }
  const Offset& widths() const { return widths_; }
  DirectionSet directions() const { return directions_; }
  int lanes_per_point() const { return lanes_per_point_; }
  const Index3& extent() const { return extent_; }
  const Index3& padded_extent() const { return padded_; }
  // Lanes of one padded grid, and of one unpadded (user) grid.
  std::int64_t padded_lanes() const { return padded_[0] * padded_[1] * padded_[2] * lanes_per_point_; }
  std::int64_t grid_lanes() const { return extent_[0] * extent_[1] * extent_[2] * lanes_per_point_; }
  // Whether the grids an apply hands the plan are held padded (the exchange on its own,
  // halo.hpp: their ghost layers are filled in place) rather than unpadded (an Operator:
  // the stencil reads ghosts where they arrive). Set once, before any exchange.
  bool grids_padded() const { return grids_padded_; }
  void hold_grids_padded() { grids_padded_ = true; }
  // Lanes from one grid of a batch to the next.
  std::int64_t grid_stride() const { return grids_padded_ ? padded_lanes() : grid_lanes(); }
  // One per direction of the halo, in order of tag; a star stencil's six faces are
  // faces()[2*axis + side].
  std::span<const Face> faces() const { return faces_; }
  // The index in faces() of the face in the opposite direction.
  std::size_t opposite(std::size_t index) const { return opposite_[index]; }
  // Lanes of the largest face: the size of one grid's slot in a message buffer.
  std::int64_t max_face_lanes() const;

  // Packs a face's send region straight from a user grid (a face reads only interior
  // points), unpadded or padded as grids_padded() says, so a batch's messages can leave
  // before any compute.
  void pack(const Face& face, const double* grid, double* buffer) const;
  // Padded grids: fills a face's ghost block of `padded` from its received message (in
  // message layout), times the face's phases; from the grid's own other end when the
  // neighbour is this rank (`source`: the opposite face); or with zeros beyond a
  // non-periodic edge.
  void unpack(const Face& face, const double* message, double* padded) const;
  void ghosts_in_place(const Face& face, const Face& source, double* padded) const;
  void zero_ghosts(const Face& face, double* padded) const;
  // Multiplies `grids` consecutive received messages of `face` by its phase, in place.
  void apply_phase(const Face& face, double* buffer, std::int64_t grids) const;
  // A face's ghosts in message layout, times its phase, from `source`'s send region of
  // an unpadded user grid: for a face whose neighbour is this rank itself (a periodic
  // axis in one box, with a Bloch phase).
  void ghosts_from_grid(const Face& face, const Face& source, const double* grid, double* buffer) const;
  // The phases of the following applies (nullptr: none). Faces across the boundary take
  // their factor; a factor of exactly 1 is skipped. Not thread-safe: call between applies.
  void set_phases(const BlochPhases* phases);

 private:
  // neighbour(direction) and crosses(direction, axis): the rank that way, and whether
  // its ghosts cross the domain's periodic boundary along that axis.
  template <class Neighbour, class Crosses>
  HaloPlan(const Index3& extent, const Offset& widths, DirectionSet directions, int lanes_per_point,
           Neighbour&& neighbour, Crosses&& crosses);

  // Copies `region` of an array of `array_extent` points per axis to (ToBuffer) or from a
  // contiguous buffer.
  template <bool ToBuffer>
  void copy_region(const Region& region, const Index3& array_extent, double* array, double* buffer) const;

  int radius_;
  Offset widths_;
  DirectionSet directions_;
  int lanes_per_point_;
  Index3 extent_;
  Index3 padded_;
  std::vector<Face> faces_;
  std::vector<std::size_t> opposite_;
  bool grids_padded_ = false;
};

// Simulated runs only (hybridfd-bench under SMPI, docs/simulation.md): a function told
// how many lanes each batch packs into its messages, so that the copying (into the
// messages and, at the receivers, out of them) is charged as simulated CPU time; the
// host's own time is not counted there. The packing itself still runs: the messages
// carry it. nullptr (the default): nothing is charged.
using PackCharge = void (*)(std::int64_t lanes);
void set_pack_charge(PackCharge charge);
// Calls the installed PackCharge, if any, with `lanes`.
void charge_packing(std::int64_t lanes);

}  // namespace hybridfd
