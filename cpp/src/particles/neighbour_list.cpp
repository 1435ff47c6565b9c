// NeighbourList: binned search (MiniMD's neighbor.cpp idea: atoms sorted into bins of at
// least half the search radius, each atom searching the 5 x 5 x 5 bins around its own),
// a full list, each atom's neighbours sorted by (tag, image shift).
#include "hybridfd/neighbour_list.hpp"

#include <algorithm>

namespace hybridfd {

void NeighbourList::build(const Atoms& atoms, const std::array<double, 3>& lower, const std::array<double, 3>& upper,
                          double reach, double cutoff_with_skin) {
  const std::int64_t total = atoms.total();
  const std::int64_t owned = atoms.owned;
  std::array<int, 3> bins{};
  std::array<double, 3> origin{}, per_length{};
  for (int axis = 0; axis < 3; ++axis) {
    const double extent = upper[axis] - lower[axis] + 2 * reach;
    bins[axis] = std::max(1, static_cast<int>(extent / (cutoff_with_skin / 2)));
    origin[axis] = lower[axis] - reach;
    per_length[axis] = bins[axis] / extent;
  }
  const std::array<const double*, 3> position{atoms.x.data(), atoms.y.data(), atoms.z.data()};
  const auto coordinate = [&](int axis, std::int64_t atom) {
    return std::clamp(static_cast<int>((position[axis][atom] - origin[axis]) * per_length[axis]), 0, bins[axis] - 1);
  };

  // Counting sort of all atoms into bins.
  const std::size_t bin_count = static_cast<std::size_t>(bins[0]) * bins[1] * bins[2];
  bin_of_.resize(static_cast<std::size_t>(total));
  by_bin_.resize(static_cast<std::size_t>(total));
  key_.resize(static_cast<std::size_t>(total));
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

  const double radius_squared = cutoff_with_skin * cutoff_with_skin;
  offsets_.resize(static_cast<std::size_t>(owned) + 1);
  offsets_[0] = 0;
  indices_.clear();
  for (std::int64_t i = 0; i < owned; ++i) {
    const double xi = atoms.x[i], yi = atoms.y[i], zi = atoms.z[i];
    const int cx = coordinate(0, i), cy = coordinate(1, i), cz = coordinate(2, i);
    const std::size_t first = indices_.size();
    for (int bx = std::max(cx - 2, 0); bx <= std::min(cx + 2, bins[0] - 1); ++bx)
      for (int by = std::max(cy - 2, 0); by <= std::min(cy + 2, bins[1] - 1); ++by)
        for (int bz = std::max(cz - 2, 0); bz <= std::min(cz + 2, bins[2] - 1); ++bz) {
          const std::size_t bin = (static_cast<std::size_t>(bx) * bins[1] + by) * bins[2] + bz;
          for (std::int32_t k = bin_start_[bin]; k < bin_start_[bin + 1]; ++k) {
            const std::int32_t j = by_bin_[static_cast<std::size_t>(k)];
            if (j == i) continue;
            const double dx = xi - atoms.x[j], dy = yi - atoms.y[j], dz = zi - atoms.z[j];
            if (dx * dx + dy * dy + dz * dz < radius_squared) indices_.push_back(j);
          }
        }
    std::sort(indices_.begin() + static_cast<std::ptrdiff_t>(first), indices_.end(),
              [this](std::int32_t a, std::int32_t b) { return key_[a] < key_[b]; });
    offsets_[static_cast<std::size_t>(i) + 1] = static_cast<std::int64_t>(indices_.size());
  }
}

}  // namespace hybridfd
