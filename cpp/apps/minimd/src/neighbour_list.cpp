// NeighbourList: binned search (MiniMD's neighbor.cpp idea: atoms sorted into bins of at
// least half the search radius, each atom searching the 5 x 5 x 5 bins around its own),
// a full list. The bins are global (cut from the whole box, anchored at 0), so an atom's
// bin follows from its position alone; each atom's partners are listed bin by bin in a
// fixed order of offsets from its own bin, and by (tag, image shift) within a bin: the
// same order on every decomposition, with no per-atom sort.
#include "hybridfd/minimd/neighbour_list.hpp"

#include <algorithm>
#include <cmath>

namespace hybridfd::minimd {

void NeighbourList::build(Atoms& atoms, const std::array<double, 3>& box, const std::array<double, 3>& lower,
                          const std::array<double, 3>& upper, double reach, double cutoff_with_skin) {
  const std::int64_t total = atoms.total();
  const std::int64_t owned = atoms.owned;
  atoms.reserve(total + 1);
  atoms.x[total] = atoms.y[total] = atoms.z[total] = phantom_position;
  const std::array<const double*, 3> position{atoms.x.data(), atoms.y.data(), atoms.z.data()};

  // Global bins of box / n per axis, n = the most bins at least (cutoff + skin) / 2 wide;
  // this rank's bins span its region and the ghosts' reach, one bin spare on each side.
  std::array<int, 3> bins{}, first_bin{};
  std::array<double, 3> per_length{};
  for (int axis = 0; axis < 3; ++axis) {
    per_length[axis] = std::max(1.0, std::floor(box[axis] / (cutoff_with_skin / 2))) / box[axis];
    first_bin[axis] = static_cast<int>(std::floor((lower[axis] - reach) * per_length[axis])) - 1;
    bins[axis] = static_cast<int>(std::floor((upper[axis] + reach) * per_length[axis])) + 2 - first_bin[axis];
  }
  const auto coordinate = [&](int axis, std::int64_t atom) {
    const int global = static_cast<int>(std::floor(position[axis][atom] * per_length[axis]));
    return std::clamp(global - first_bin[axis], 0, bins[axis] - 1);
  };

  // Counting sort of all atoms into bins, then each bin by (tag, image).
  const std::size_t bin_count = static_cast<std::size_t>(bins[0]) * bins[1] * bins[2];
  const auto atoms_count = static_cast<std::size_t>(total);
  bin_of_.resize(atoms_count), by_bin_.resize(atoms_count), key_.resize(atoms_count);
  binned_x_.resize(atoms_count), binned_y_.resize(atoms_count), binned_z_.resize(atoms_count);
  bin_start_.assign(bin_count + 1, 0);
  for (std::int64_t atom = 0; atom < total; ++atom) {
    const int bin = (coordinate(0, atom) * bins[1] + coordinate(1, atom)) * bins[2] + coordinate(2, atom);
    bin_of_[static_cast<std::size_t>(atom)] = bin;
    ++bin_start_[static_cast<std::size_t>(bin) + 1];
    key_[static_cast<std::size_t>(atom)] = atoms.tag[static_cast<std::size_t>(atom)] * 27 + atoms.image[atom];
  }
  for (std::size_t bin = 0; bin < bin_count; ++bin) bin_start_[bin + 1] += bin_start_[bin];
  for (std::int64_t atom = 0; atom < total; ++atom)
    by_bin_[static_cast<std::size_t>(bin_start_[static_cast<std::size_t>(bin_of_[atom])]++)] =
        static_cast<std::int32_t>(atom);
  // bin_start_[b] now holds bin b's end: shift back to starts.
  for (std::size_t bin = bin_count; bin > 0; --bin) bin_start_[bin] = bin_start_[bin - 1];
  bin_start_[0] = 0;
  for (std::size_t bin = 0; bin < bin_count; ++bin)
    std::sort(by_bin_.begin() + bin_start_[bin], by_bin_.begin() + bin_start_[bin + 1],
              [this](std::int32_t a, std::int32_t b) { return key_[a] < key_[b]; });
  for (std::size_t slot = 0; slot < atoms_count; ++slot) {
    const std::int32_t atom = by_bin_[slot];
    binned_x_[slot] = position[0][atom], binned_y_[slot] = position[1][atom], binned_z_[slot] = position[2][atom];
  }

  const double radius_squared = cutoff_with_skin * cutoff_with_skin;
  const double* bx = binned_x_.data();
  const double* by = binned_y_.data();
  const double* bz = binned_z_.data();
  const std::int32_t* atom_in_slot = by_bin_.data();
  offsets_.resize(static_cast<std::size_t>(owned) + 1);
  offsets_[0] = 0;
  std::size_t used = 0;
  pairs_ = 0;
  for (std::int64_t i = 0; i < owned; ++i) {
    const double xi = position[0][i], yi = position[1][i], zi = position[2][i];
    const int cx = coordinate(0, i), cy = coordinate(1, i), cz = coordinate(2, i);
    const std::size_t first = used;
    for (int x_bin = std::max(cx - 2, 0); x_bin <= std::min(cx + 2, bins[0] - 1); ++x_bin)
      for (int y_bin = std::max(cy - 2, 0); y_bin <= std::min(cy + 2, bins[1] - 1); ++y_bin) {
        // The z bins of one (x, y) column are adjacent in bin order: one stretch.
        const std::size_t column = (static_cast<std::size_t>(x_bin) * bins[1] + y_bin) * bins[2];
        const std::int32_t begin = bin_start_[column + static_cast<std::size_t>(std::max(cz - 2, 0))];
        const std::int32_t end = bin_start_[column + static_cast<std::size_t>(std::min(cz + 2, bins[2] - 1)) + 1];
        if (indices_.size() < used + static_cast<std::size_t>(end - begin) + round)
          indices_.resize(2 * (used + static_cast<std::size_t>(end - begin) + round));
        std::int32_t* into = indices_.data();
        // Branch-free: every candidate is written, kept only if within reach.
        for (std::int32_t k = begin; k < end; ++k) {
          const double dx = xi - bx[k], dy = yi - by[k], dz = zi - bz[k];
          const std::int32_t j = atom_in_slot[k];
          into[used] = j;
          used += (dx * dx + dy * dy + dz * dz < radius_squared) & (j != i);
        }
      }
    pairs_ += static_cast<std::int64_t>(used - first);
    while ((used - first) % round) indices_[used++] = static_cast<std::int32_t>(total);
    offsets_[static_cast<std::size_t>(i) + 1] = static_cast<std::int64_t>(used);
  }
}

}  // namespace hybridfd::minimd
