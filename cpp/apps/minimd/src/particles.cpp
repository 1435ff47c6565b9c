// Atoms (structure of arrays) and ParticleRegion (a rank's slab of the periodic box).
#include "hybridfd/minimd/particles.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace hybridfd::minimd {

void Atoms::reserve(std::int64_t atoms) {
  if (static_cast<std::int64_t>(x.size()) >= atoms) return;
  const auto size = static_cast<std::size_t>(std::max<std::int64_t>(atoms + atoms / 2, 64));
  for (auto* values : {&x, &y, &z, &vx, &vy, &vz, &fx, &fy, &fz}) values->resize(size);
  tag.resize(size);
  image.resize(size);
}

void Atoms::move(std::int64_t from, std::int64_t to) {
  const auto f = static_cast<std::size_t>(from), t = static_cast<std::size_t>(to);
  x[t] = x[f], y[t] = y[f], z[t] = z[f];
  vx[t] = vx[f], vy[t] = vy[f], vz[t] = vz[f];
  tag[t] = tag[f], image[t] = image[f];
}

void Atoms::permute_owned(std::span<const std::int32_t> order, Atoms& spare) {
  spare.reserve(owned);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto from = static_cast<std::size_t>(order[k]);
    spare.x[k] = x[from], spare.y[k] = y[from], spare.z[k] = z[from];
    spare.vx[k] = vx[from], spare.vy[k] = vy[from], spare.vz[k] = vz[from];
    spare.tag[k] = tag[from], spare.image[k] = image[from];
  }
  for (auto [mine, theirs] : {std::pair{&x, &spare.x},
                              {&y, &spare.y},
                              {&z, &spare.z},
                              {&vx, &spare.vx},
                              {&vy, &spare.vy},
                              {&vz, &spare.vz},
                              {&fx, &spare.fx},
                              {&fy, &spare.fy},
                              {&fz, &spare.fz}})
    mine->swap(*theirs);
  tag.swap(spare.tag);
  image.swap(spare.image);
  ghosts = 0;
}

ParticleRegion::ParticleRegion(const std::array<double, 3>& box, const std::array<int, 3>& grid,
                               const std::array<int, 3>& coords)
    : box_(box), grid_(grid), coords_(coords) {}

double ParticleRegion::bound(int axis, int part) const {
  return part >= grid_[axis] ? box_[axis] : box_[axis] * part / grid_[axis];
}

int ParticleRegion::owner_coordinate(int axis, double position) const {
  const int parts = grid_[axis];
  int part = std::clamp(static_cast<int>(position * parts / box_[axis]), 0, parts - 1);
  // The estimate may be one off where rounding meets a bound; bound() decides.
  while (part > 0 && position < bound(axis, part)) --part;
  while (part < parts - 1 && position >= bound(axis, part + 1)) ++part;
  return part;
}

double ParticleRegion::wrap(int axis, double position) const {
  const double length = box_[axis];
  if (position < 0 || position >= length) {
    position -= std::floor(position / length) * length;
    // floor's product may round to the box's end (or just below 0).
    if (position >= length) position -= length;
    if (position < 0) position += length;
    if (position >= length) position = 0;
  }
  return position;
}

}  // namespace hybridfd::minimd
