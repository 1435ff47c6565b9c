// NeighbourList: MiniMD's binned neighbour search, kept as a FULL list (every owned atom
// lists all atoms, owned or ghost, within cutoff + skin), so no force is sent back to a
// ghost's owner. Each atom's list is in an order that follows from positions and tags
// alone (global bins in a fixed order around the atom's own, (tag, image shift) within a
// bin): the force on an atom is then summed in the same order whatever the decomposition
// (docs/design.md, "Particles").
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hybridfd/minimd/particles.hpp"

namespace hybridfd::minimd {

class NeighbourList {
 public:
  // Each atom's list is padded to a whole number of rounds of this many entries with the
  // index atoms.total(): a phantom atom the force loop finds far away (its pairs add
  // exactly zero), so the loop runs whole vectors without a remainder.
  static constexpr int round = 4;
  // Where build() puts the phantom atom: its pairs lie far beyond any cutoff.
  static constexpr double phantom_position = 1e100;

  // Builds the lists and places the phantom atom at index atoms.total() (room for it
  // is made). Bins cut the whole box (global, so an atom's bin does not depend on the
  // decomposition), each at least (cutoff + skin) / 2 wide, so an atom's partners lie
  // within two bins of its own; this rank bins [lower - reach, upper + reach) per axis.
  void build(Atoms& atoms, const std::array<double, 3>& box, const std::array<double, 3>& lower,
             const std::array<double, 3>& upper, double reach, double cutoff_with_skin);

  // Owned atom i's neighbours: indices()[offsets()[i] .. offsets()[i + 1]) (indices()
  // may be longer than the lists).
  const std::vector<std::int64_t>& offsets() const { return offsets_; }
  const std::vector<std::int32_t>& indices() const { return indices_; }
  // Pairs listed (both orders, as the list is full), padding not counted.
  std::int64_t pairs() const { return pairs_; }

 private:
  std::vector<std::int64_t> offsets_;
  std::vector<std::int32_t> indices_;
  std::int64_t pairs_ = 0;
  // Scratch kept between builds (amortised growth): bin and sort key of each atom, atoms
  // by bin with their positions in bin order (the search streams through them).
  std::vector<std::int32_t> bin_of_, bin_start_, by_bin_;
  std::vector<std::int64_t> key_;
  std::vector<double> binned_x_, binned_y_, binned_z_;
};

}  // namespace hybridfd::minimd
