// What every schedule does with a batch of grids, in one place: buffer sets (padded
// grids and face messages for one batch), copy-in, pack, message list, unpack and
// compute. A schedule only decides the order. Private to the core.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "hybridfd/kernel.hpp"
#include "hybridfd/schedule.hpp"

namespace hybridfd::detail {

// Which axes' faces a step touches.
inline constexpr std::array<int, 3> all_axes{0, 1, 2};

class BatchBuffers {
 public:
  // `sets` independent buffer sets (double buffering needs two), each for up to
  // `context.batches.batch` grids (the largest batch). Allocated and zeroed once: ghosts at a non-periodic edge are
  // never written and stay zero.
  BatchBuffers(const ScheduleContext& context, int sets)
      : context_(context),
        plan_(*context.plan),
        face_slot_(plan_.max_face_lanes() * context.batches.batch),
        padded_(static_cast<std::size_t>(sets)),
        send_(static_cast<std::size_t>(sets)),
        receive_(static_cast<std::size_t>(sets)) {
    for (int set = 0; set < sets; ++set) {
      padded_[set].assign(static_cast<std::size_t>(plan_.padded_lanes() * context.batches.batch), 0.0);
      send_[set].resize(static_cast<std::size_t>(face_slot_ * 6));
      receive_[set].resize(static_cast<std::size_t>(face_slot_ * 6));
    }
  }

  const ScheduleContext& context() const { return context_; }

  double* padded(int set, std::int64_t k) { return padded_[set].data() + k * plan_.padded_lanes(); }

  void copy_in(int set, const double* in, std::int64_t first, std::int64_t count) {
    for (std::int64_t k = 0; k < count; ++k)
      plan_.copy_interior_in(in + (first + k) * plan_.grid_lanes(), padded(set, k));
  }

  // Packs the faces of `axes` for `count` grids (each face's grids one after another, so
  // one message per neighbour carries the whole batch) and lists their messages.
  template <std::size_t Axes>
  std::array<FaceMessage, 2 * Axes> pack(int set, std::int64_t count, const std::array<int, Axes>& axes) {
    std::array<FaceMessage, 2 * Axes> messages;
    std::size_t next = 0;
    for (int axis : axes)
      for (int side = 0; side < 2; ++side) {
        const int index = 2 * axis + side;
        const Face& face = plan_.faces()[index];
        double* send = send_[set].data() + index * face_slot_;
        double* receive = receive_[set].data() + index * face_slot_;
        if (face.neighbour != MPI_PROC_NULL)
          for (std::int64_t k = 0; k < count; ++k) plan_.pack(face, padded(set, k), send + k * face.lanes);
        messages[next++] = {face.neighbour, send, receive, face.lanes * count, face.send_tag, face.receive_tag};
      }
    return messages;
  }

  void unpack(int set, std::int64_t count, std::span<const int> axes) {
    for (int axis : axes)
      for (int side = 0; side < 2; ++side) {
        const int index = 2 * axis + side;
        const Face& face = plan_.faces()[index];
        if (face.neighbour == MPI_PROC_NULL) continue;
        const double* receive = receive_[set].data() + index * face_slot_;
        for (std::int64_t k = 0; k < count; ++k) plan_.unpack(face, receive + k * face.lanes, padded(set, k));
      }
  }

  // The stencil on `region` of grid k of the set, into output grid first + k.
  void compute(int set, double* out, std::int64_t first, std::int64_t k, const Region& region) {
    apply_stencil(*context_.stencil, plan_, padded(set, k), region, out + (first + k) * plan_.grid_lanes());
  }

  Region whole_box() const { return {{0, 0, 0}, plan_.extent()}; }

 private:
  ScheduleContext context_;
  const HaloPlan& plan_;
  std::int64_t face_slot_;  // lanes of one face's slot: largest face x batch
  std::vector<std::vector<double>> padded_;
  std::vector<std::vector<double>> send_;
  std::vector<std::vector<double>> receive_;
};

// Calls step(first, count) for each batch of the apply: sizes from the batch shape
// (sloped at the start), the last one clipped to the grids left.
template <class Step>
void for_each_batch(const BatchShape& shape, std::int64_t grids, Step&& step) {
  std::int64_t first = 0;
  for (int index = 0; first < grids; ++index) {
    const std::int64_t count = std::min<std::int64_t>(shape.size(index), grids - first);
    step(first, count);
    first += count;
  }
}

}  // namespace hybridfd::detail
