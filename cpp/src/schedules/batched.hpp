// What every schedule does with a batch of grids, in one place: message buffers, packing
// faces straight from the user's grids, padded grids, unpack and compute. A schedule only
// decides the order. Private to the core.
//
// Faces are packed from the unpadded input, so a batch of b grids costs b grids' faces
// of message buffers, not b padded grids: each grid is copied into a padded buffer only
// right before it is computed, while it is hot in cache.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "hybridfd/kernel.hpp"
#include "hybridfd/schedule.hpp"

namespace hybridfd::detail {

inline constexpr std::array<int, 3> all_axes{0, 1, 2};

class BatchBuffers {
 public:
  // `message_sets` independent sets of send and receive buffers (double buffering has
  // two batches in flight), each for the largest batch; `padded_grids` padded grid
  // buffers. Allocated and zeroed once: ghosts at a non-periodic edge are never written
  // and stay zero.
  BatchBuffers(const ScheduleContext& context, int message_sets, std::int64_t padded_grids)
      : context_(context),
        plan_(*context.plan),
        face_slot_(plan_.max_face_lanes() * context.batches.batch),
        padded_(static_cast<std::size_t>(plan_.padded_lanes() * padded_grids), 0.0),
        send_(static_cast<std::size_t>(message_sets)),
        receive_(static_cast<std::size_t>(message_sets)) {
    for (int set = 0; set < message_sets; ++set) {
      send_[set].resize(static_cast<std::size_t>(face_slot_ * 6));
      receive_[set].resize(static_cast<std::size_t>(face_slot_ * 6));
    }
  }

  const ScheduleContext& context() const { return context_; }
  Region whole_box() const { return {{0, 0, 0}, plan_.extent()}; }

  // Packs the faces of `axes` of input grids first..first+count-1 (each face's grids one
  // after another, so one message per neighbour carries the whole batch) and lists the
  // messages.
  template <std::size_t Axes>
  std::array<FaceMessage, 2 * Axes> pack(int set, const double* in, std::int64_t first, std::int64_t count,
                                         const std::array<int, Axes>& axes) {
    std::array<FaceMessage, 2 * Axes> messages;
    std::size_t next = 0;
    for (int axis : axes)
      for (int side = 0; side < 2; ++side) {
        const int index = 2 * axis + side;
        const Face& face = plan_.faces()[index];
        double* send = send_[set].data() + index * face_slot_;
        double* receive = receive_[set].data() + index * face_slot_;
        if (face.neighbour != MPI_PROC_NULL)
          for (std::int64_t k = 0; k < count; ++k)
            plan_.pack(face, in + (first + k) * plan_.grid_lanes(), send + k * face.lanes);
        messages[next++] = {face.neighbour, send, receive, face.lanes * count, face.send_tag, face.receive_tag};
      }
    return messages;
  }

  // Copies input grid `grid` into padded buffer `slot`.
  void fill(std::int64_t slot, const double* in, std::int64_t grid) {
    plan_.copy_interior_in(in + grid * plan_.grid_lanes(), padded(slot));
  }

  // Fills the ghosts of `axes` of padded buffer `slot` with grid k of the batch received
  // in message set `set`.
  void unpack(int set, std::int64_t slot, std::int64_t k, std::span<const int> axes) {
    for (int axis : axes)
      for (int side = 0; side < 2; ++side) {
        const int index = 2 * axis + side;
        const Face& face = plan_.faces()[index];
        if (face.neighbour == MPI_PROC_NULL) continue;
        plan_.unpack(face, receive_[set].data() + index * face_slot_ + k * face.lanes, padded(slot));
      }
  }

  // Computes input grids first..first+count-1, whose faces arrived in message set `set`:
  // each copied into padded buffer 0, its ghosts filled, its whole box computed. With a
  // ticket of a batch in flight, tests that batch's messages every `progress` grids.
  void compute_batch(int set, const double* in, double* out, std::int64_t first, std::int64_t count,
                     int in_flight = -1) {
    for (std::int64_t k = 0; k < count; ++k) {
      fill(0, in, first + k);
      unpack(set, 0, k, all_axes);
      compute(0, out, first + k, whole_box());
      if (in_flight >= 0 && context_.progress > 0 && (k + 1) % context_.progress == 0)
        context_.transport->progress(in_flight);
    }
  }

  // The stencil on `region` of padded buffer `slot`, into output grid `grid`.
  void compute(std::int64_t slot, double* out, std::int64_t grid, const Region& region) {
    apply_stencil(*context_.stencil, plan_, padded(slot), region, out + grid * plan_.grid_lanes());
  }

 private:
  double* padded(std::int64_t slot) { return padded_.data() + slot * plan_.padded_lanes(); }

  ScheduleContext context_;
  const HaloPlan& plan_;
  std::int64_t face_slot_;  // lanes of one face's slot: largest face x largest batch
  std::vector<double> padded_;
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
