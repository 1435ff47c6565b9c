// NeighbourList: MiniMD's binned neighbour search, kept as a FULL list (every owned atom
// lists all atoms, owned or ghost, within cutoff + skin), so no force is sent back to a
// ghost's owner. Each atom's list is sorted by (neighbour tag, image shift): the force on
// an atom is then summed in the same order whatever the decomposition (docs/design.md,
// "Particles").
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hybridfd/particles.hpp"

namespace hybridfd {

class NeighbourList {
 public:
  // Bins cover [lower - reach, upper + reach) per axis, each at least (cutoff + skin) / 2
  // wide, so an atom's partners lie within two bins of its own.
  void build(const Atoms& atoms, const std::array<double, 3>& lower, const std::array<double, 3>& upper, double reach,
             double cutoff_with_skin);

  // Owned atom i's neighbours: indices [offsets()[i], offsets()[i + 1]) of indices().
  const std::vector<std::int64_t>& offsets() const { return offsets_; }
  const std::vector<std::int32_t>& indices() const { return indices_; }
  std::int64_t pairs() const { return offsets_.empty() ? 0 : offsets_.back(); }

 private:
  std::vector<std::int64_t> offsets_;
  std::vector<std::int32_t> indices_;
  // Scratch kept between builds (amortised growth): bin of each atom, atoms by bin,
  // each atom's sort key.
  std::vector<std::int32_t> bin_of_, bin_start_, by_bin_;
  std::vector<std::int64_t> key_;
};

}  // namespace hybridfd
