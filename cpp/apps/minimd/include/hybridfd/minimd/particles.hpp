// Atoms and the region of the periodic box a rank owns (MiniMD slides, "Overview of
// MiniMD": each rank owns the atoms of its region and holds ghost copies of the atoms in
// its neighbours' boundary regions). Atoms live in structure-of-arrays form, so the force
// loop reads positions as contiguous float64 arrays.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace hybridfd::minimd {

// A ghost is a periodic image of an atom: its owner's position plus `shift` box lengths
// per axis, each shift in {-1, 0, 1}, encoded as one small integer (0 shift: 13).
constexpr std::int32_t no_image_shift = 13;
inline std::int32_t image_shift_code(int axis, int shift) { return shift * (axis == 0 ? 9 : axis == 1 ? 3 : 1); }

// Owned atoms at [0, owned), ghosts at [owned, owned + ghosts). Velocities and forces
// are meaningful for owned atoms only. Arrays grow and never shrink (amortised growth,
// nothing allocated in a steady state).
struct Atoms {
  std::vector<double> x, y, z;
  std::vector<double> vx, vy, vz;
  std::vector<double> fx, fy, fz;
  std::vector<std::int64_t> tag;    // the atom's id, the same on every rank count
  std::vector<std::int32_t> image;  // image shift code; no_image_shift for owned atoms
  std::int64_t owned = 0;
  std::int64_t ghosts = 0;

  std::int64_t total() const { return owned + ghosts; }
  // Makes room for `atoms` owned and ghost atoms together, keeping the contents.
  void reserve(std::int64_t atoms);
  std::array<double*, 3> position() { return {x.data(), y.data(), z.data()}; }
  // Copies atom `from` over atom `to` (positions, velocities, tag, image).
  void move(std::int64_t from, std::int64_t to);
  // Puts the owned atoms in `order` (a permutation of [0, owned)) and drops the ghosts;
  // `spare` is scratch whose storage is swapped in (no allocation once both are grown).
  void permute_owned(std::span<const std::int32_t> order, Atoms& spare);
};

// The box [0, L) per axis cut into grid[axis] equal slabs; a rank owns the region at its
// process-grid coordinates. Ownership is decided by bound() alone, so every rank (and
// every rank count) agrees on it to the last bit.
class ParticleRegion {
 public:
  ParticleRegion() = default;
  ParticleRegion(const std::array<double, 3>& box, const std::array<int, 3>& grid, const std::array<int, 3>& coords);

  // Where slab `part` of an axis starts (part = grid[axis]: the box's end, L).
  double bound(int axis, int part) const;
  double lower(int axis) const { return bound(axis, coords_[axis]); }
  double upper(int axis) const { return bound(axis, coords_[axis] + 1); }
  // The slab of an axis holding `position`, for a position in [0, L).
  int owner_coordinate(int axis, double position) const;
  // Wraps a position into [0, L) by whole box lengths.
  double wrap(int axis, double position) const;

  const std::array<double, 3>& box() const { return box_; }
  const std::array<int, 3>& grid() const { return grid_; }
  const std::array<int, 3>& coords() const { return coords_; }

 private:
  std::array<double, 3> box_{};
  std::array<int, 3> grid_{1, 1, 1};
  std::array<int, 3> coords_{};
};

}  // namespace hybridfd::minimd
