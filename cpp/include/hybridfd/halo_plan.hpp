// HaloPlan: the six faces of one box for a stencil of radius r (GPAW journal, Sect. 4.1:
// a rank needs its neighbours' surface points to compute its own surface points).
//
// All sizes are in float64 lanes (a complex128 point is 2 lanes). Regions are given in
// the coordinates of the box padded by r on every side, (nx+2r, ny+2r, (nz+2r)*lanes),
// with the box at [r, r+n) (no grid is held padded in an apply: the kernel reads ghosts
// where they are, kernel.hpp). A star stencil reads no corner or edge ghosts, so each
// face is the box's cross-section only, and exchanges along different axes are
// independent (what lets later schedules post all dimensions at once).
//
// Bloch-periodic boundaries (GPAW's k-points, its apply(in, out, phase_cd)): a ghost
// layer filled across the domain's periodic boundary holds the neighbour's points times a
// phase factor, applied here (apply_phase on a received face, ghosts_from_grid for a rank
// that is its own neighbour), so every schedule, transport and model gets it.
#pragma once

#include <array>
#include <complex>
#include <cstdint>

#include "hybridfd/decomposition.hpp"

namespace hybridfd {

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

struct Face {
  int axis = 0;
  int side = 0;                   // 0: lower (towards smaller index), 1: upper
  int neighbour = MPI_PROC_NULL;  // rank in the Cartesian communicator
  Region send;                    // the r surface planes this rank sends that way
  Region ghost;                   // the r ghost planes filled from that neighbour
  std::int64_t lanes = 0;         // float64 lanes per grid in either region
  int send_tag = 0;               // tags name the direction of travel, so that two
  int receive_tag = 0;            // messages between the same pair never mix up
  bool across_boundary = false;   // the ghosts come across the domain's periodic boundary
  bool phased = false;            // this apply multiplies them by `phase` (complex only)
  std::complex<double> phase{1.0, 0.0};
};

// Per axis and side of the whole domain: the factor for ghost values that come across
// that periodic boundary (side 1: points wrapped from the lower end to beyond the upper
// end; a Bloch wave with k-point k_c has e^{2 pi i k_c} there and its inverse at side 0).
using BlochPhases = std::array<std::array<std::complex<double>, 2>, 3>;

class HaloPlan {
 public:
  HaloPlan(const Decomposition& decomposition, int radius);
  // A box with no neighbours (every face MPI_PROC_NULL), for using the kernel alone.
  HaloPlan(const Index3& extent, int radius, int lanes_per_point);

  int radius() const { return radius_; }
  int lanes_per_point() const { return lanes_per_point_; }
  const Index3& extent() const { return extent_; }
  const Index3& padded_extent() const { return padded_; }
  // Lanes of one padded grid, and of one unpadded (user) grid.
  std::int64_t padded_lanes() const { return padded_[0] * padded_[1] * padded_[2] * lanes_per_point_; }
  std::int64_t grid_lanes() const { return extent_[0] * extent_[1] * extent_[2] * lanes_per_point_; }
  // faces()[2*axis + side]
  const std::array<Face, 6>& faces() const { return faces_; }
  // Lanes of the largest face: the size of one grid's slot in a message buffer.
  std::int64_t max_face_lanes() const;

  // Packs a face's send region straight from an unpadded user grid (a face reads only
  // interior points), so a batch's messages can leave before any compute.
  void pack(const Face& face, const double* grid, double* buffer) const;
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
  HaloPlan(const Index3& extent, int radius, int lanes_per_point, const std::array<std::array<int, 2>, 3>& neighbours,
           const std::array<std::array<bool, 2>, 3>& across_boundary = {});

  // Copies `region` of an array of `array_extent` points per axis to (ToBuffer) or from a
  // contiguous buffer.
  template <bool ToBuffer>
  void copy_region(const Region& region, const Index3& array_extent, double* array, double* buffer) const;

  int radius_;
  int lanes_per_point_;
  Index3 extent_;
  Index3 padded_;
  std::array<Face, 6> faces_;
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
