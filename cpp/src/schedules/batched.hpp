// What every schedule does with a batch of grids, in one place: message buffers, packing
// faces straight from the user's grids, padded copies, unpack and compute, shared among
// the threads of a team. A schedule only decides the order. Private to the core.
//
// Faces are packed from the unpadded input, so a batch of b grids costs b grids' faces
// of message buffers, not b padded grids: each grid is copied into a padded buffer only
// right before it is computed, while it is hot in cache.
//
// A team shares every grid by x-slabs (the masteronly models): each thread owns a padded
// buffer for its slab plus the r planes either side that its stencil reads, fills it from
// the input and the received faces itself, and computes its slab. So threads never wait
// for one another inside a batch (no barrier per grid); the price is copying 2r planes
// twice per thread boundary. One thread is one slab: the whole box.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "hybridfd/kernel.hpp"
#include "hybridfd/schedule.hpp"

namespace hybridfd::detail {

inline constexpr std::array<int, 3> all_axes{0, 1, 2};

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One thread's x-planes [begin, end) of every grid, held padded in `slots` buffers.
class Slab {
 public:
  Slab(const HaloPlan& box, std::int64_t begin, std::int64_t end, std::int64_t slots)
      : box_(box),
        begin_(begin),
        end_(end),
        plane_lanes_(box.extent()[1] * box.extent()[2] * box.lanes_per_point()),
        plan_({end - begin, box.extent()[1], box.extent()[2]}, box.radius(), box.lanes_per_point()),
        padded_(static_cast<std::size_t>(end > begin ? slots * plan_.padded_lanes() : 0), 0.0) {}

  bool empty() const { return begin_ == end_; }

  // Copies the planes of the unpadded input grid that this slab reads, [begin - r,
  // end + r) within the box, into padded buffer `slot`. Ghosts at a non-periodic edge are
  // never written and stay zero.
  void fill(std::int64_t slot, const double* grid) {
    const std::int64_t r = box_.radius();
    const std::int64_t low = std::max<std::int64_t>(0, begin_ - r);
    const std::int64_t high = std::min(box_.extent()[0], end_ + r);
    const Region planes{{low - begin_ + r, r, r}, {high - low, box_.extent()[1], box_.extent()[2]}};
    plan_.copy_in(planes, grid + low * plane_lanes_, padded(slot));
  }

  // Fills the ghosts of the box's `face` that this slab reads from `message`, the face's
  // received points of one grid. The message holds the face's region in C order, so a
  // range of x-planes of it is one contiguous block.
  void unpack(std::int64_t slot, const Face& face, const double* message) {
    const std::int64_t r = box_.radius();
    Region ghost = face.ghost;  // padded coordinates; y and z are the slab's too
    if (face.axis == 0) {
      const std::int64_t first = face.ghost.begin[0] - r;  // box coordinates
      const std::int64_t low = std::max(first, begin_ - r), high = std::min(first + r, end_ + r);
      if (low >= high) return;
      ghost.begin[0] = low - begin_ + r, ghost.extent[0] = high - low;
      message += (low - first) * plane_lanes_;
    } else {
      ghost.begin[0] = r, ghost.extent[0] = end_ - begin_;
      message += begin_ * (face.lanes / box_.extent()[0]);
    }
    plan_.copy_in(ghost, message, padded(slot));
  }

  // The stencil on the part of `region` (box coordinates) in this slab, from padded
  // buffer `slot` into the unpadded output grid `grid`.
  void compute(const Stencil& stencil, std::int64_t slot, const Region& region, double* grid) {
    const std::int64_t low = std::max(region.begin[0], begin_);
    const std::int64_t high = std::min(region.begin[0] + region.extent[0], end_);
    if (low >= high) return;
    Region mine = region;
    mine.begin[0] = low - begin_, mine.extent[0] = high - low;
    apply_stencil(stencil, plan_, padded(slot), mine, grid + begin_ * plane_lanes_);
  }

 private:
  double* padded(std::int64_t slot) { return padded_.data() + slot * plan_.padded_lanes(); }

  const HaloPlan& box_;
  std::int64_t begin_, end_;
  std::int64_t plane_lanes_;  // lanes of one x-plane of an unpadded grid
  HaloPlan plan_;             // the slab as a box of its own, with no neighbours
  std::vector<double> padded_;
};

class BatchBuffers {
 public:
  // What compute() does with each grid of a batch.
  struct Step {
    bool fill = true;                      // copy the grid into its padded buffer first
    bool hold = false;                     // grid k of the batch keeps buffer k (for a later
                                           // step); else one buffer serves them in turn
    std::span<const int> axes = all_axes;  // ghosts to fill from the batch's messages
    std::span<const Region> regions;       // what to compute, in box coordinates
  };

  // `message_sets` independent sets of send and receive buffers (double buffering has
  // two batches in flight), each for the largest batch; `held_grids` padded buffers per
  // thread. Allocated and zeroed once.
  BatchBuffers(const ScheduleContext& context, int message_sets, std::int64_t held_grids)
      : context_(context),
        plan_(*context.plan),
        face_slot_(plan_.max_face_lanes() * context.batches.batch),
        whole_box_{Region{{0, 0, 0}, plan_.extent()}},
        send_(static_cast<std::size_t>(message_sets)),
        receive_(static_cast<std::size_t>(message_sets)) {
    for (int set = 0; set < message_sets; ++set) {
      send_[set].resize(static_cast<std::size_t>(face_slot_ * 6));
      receive_[set].resize(static_cast<std::size_t>(face_slot_ * 6));
    }
    // Thread 0 weighs master_share, the others 1: slab bounds at the cumulative weights.
    const TeamWork& team = context.team;
    const int threads = team.threads();
    const double master = threads == 1 ? 1.0 : team.master_share;
    const double total = master + (threads - 1);
    const std::int64_t n = plan_.extent()[0];
    std::int64_t begin = 0;
    slabs_.reserve(static_cast<std::size_t>(threads));
    for (int thread = 0; thread < threads; ++thread) {
      const std::int64_t end =
          thread + 1 == threads ? n : static_cast<std::int64_t>(std::floor(n * (master + thread) / total));
      slabs_.emplace_back(plan_, begin, end, held_grids);
      begin = end;
    }
    busy_.resize(slabs_.size());
  }

  const ScheduleContext& context() const { return context_; }
  std::span<const Region> whole_box() const { return whole_box_; }

  // Packs the faces of `axes` of input grids first..first+count-1 (each face's grids one
  // after another, so one message per neighbour carries the whole batch) and lists the
  // messages. With parallel_pack the team shares the copying.
  template <std::size_t Axes>
  std::array<FaceMessage, 2 * Axes> pack(int set, const double* in, std::int64_t first, std::int64_t count,
                                         const std::array<int, Axes>& axes) {
    std::array<FaceMessage, 2 * Axes> messages;
    for (std::size_t next = 0; next < 2 * Axes; ++next) {
      const int index = 2 * axes[next / 2] + static_cast<int>(next % 2);
      const Face& face = plan_.faces()[index];
      messages[next] = {face.neighbour,     send(set, index), receive(set, index),
                        face.lanes * count, face.send_tag,    face.receive_tag};
    }
    // Units of work: one face of one grid, numbered face-major.
    const std::int64_t units = static_cast<std::int64_t>(2 * Axes) * count;
    auto copy = [&](int thread) {
      const int threads = context_.team.parallel_pack ? context_.team.threads() : 1;
      for (std::int64_t unit = units * thread / threads; unit < units * (thread + 1) / threads; ++unit) {
        const std::int64_t next = unit / count, k = unit % count;
        const int index = 2 * axes[next / 2] + static_cast<int>(next % 2);
        const Face& face = plan_.faces()[index];
        if (face.neighbour != MPI_PROC_NULL)
          plan_.pack(face, in + (first + k) * plan_.grid_lanes(), send(set, index) + k * face.lanes);
      }
    };
    if (context_.team.parallel_pack && context_.team.threads() > 1)
      context_.team.team->run(copy);
    else
      copy(0);
    return messages;
  }

  // For each input grid first..first+count-1, whose faces arrived in message set `set`:
  // the step's fill, unpack and compute, each thread on its slab. `in_flight`, the ticket
  // of a batch whose messages are under way, is tested every `progress` grids by thread 0,
  // or (master_waits) completed by thread 0 before it computes its share.
  void compute(int set, const double* in, double* out, std::int64_t first, std::int64_t count, const Step& step,
               int in_flight = -1) {
    const ScheduleContext& context = context_;
    const auto start = std::chrono::steady_clock::now();
    auto work = [&](int thread) {
      const bool master = thread == 0;
      if (master && context.team.master_waits && in_flight >= 0) context.transport->finish(in_flight);
      const bool test = master && !context.team.master_waits && in_flight >= 0 && context.progress > 0;
      const auto busy_start = std::chrono::steady_clock::now();
      Slab& slab = slabs_[static_cast<std::size_t>(thread)];
      for (std::int64_t k = 0; k < count; ++k) {
        if (!slab.empty()) {
          const std::int64_t slot = step.hold ? k : 0;
          if (step.fill) slab.fill(slot, in + (first + k) * plan_.grid_lanes());
          for (int axis : step.axes)
            for (int side = 0; side < 2; ++side) {
              const int index = 2 * axis + side;
              const Face& face = plan_.faces()[index];
              if (face.neighbour != MPI_PROC_NULL) slab.unpack(slot, face, receive(set, index) + k * face.lanes);
            }
          for (const Region& region : step.regions)
            slab.compute(*context.stencil, slot, region, out + (first + k) * plan_.grid_lanes());
        }
        if (test && (k + 1) % context.progress == 0) context.transport->progress(in_flight);
      }
      busy_[static_cast<std::size_t>(thread)] = seconds_since(busy_start);
    };
    if (slabs_.size() > 1)
      context.team.team->run(work);
    else
      work(0);
    if (PhaseTimes* times = context.phase_times) {
      times->compute_phases += seconds_since(start);
      for (const double busy : busy_) times->thread_busy += busy / static_cast<double>(busy_.size());
    }
  }

  // The common step: whole boxes, one padded buffer per thread.
  void compute_batch(int set, const double* in, double* out, std::int64_t first, std::int64_t count,
                     int in_flight = -1) {
    compute(set, in, out, first, count, Step{.regions = whole_box()}, in_flight);
  }

 private:
  double* send(int set, int face) { return send_[set].data() + face * face_slot_; }
  double* receive(int set, int face) { return receive_[set].data() + face * face_slot_; }

  ScheduleContext context_;
  const HaloPlan& plan_;
  std::int64_t face_slot_;  // lanes of one face's slot: largest face x largest batch
  std::array<Region, 1> whole_box_;
  std::vector<std::vector<double>> send_;
  std::vector<std::vector<double>> receive_;
  std::vector<Slab> slabs_;   // one per thread
  std::vector<double> busy_;  // per thread: seconds computing in the current step
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
