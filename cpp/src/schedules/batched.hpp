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
//
// The Tracer's events are recorded here too, where the PhaseTimes are: pack, post and wait
// of each batch, and each thread's unpack and compute of each grid (or window of one).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "hybridfd/kernel.hpp"
#include "hybridfd/schedule.hpp"

namespace hybridfd::detail {

inline constexpr std::array<int, 3> all_axes{0, 1, 2};

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A thread's x-planes [begin, end) of a grid, padded, in `slots` buffers of room for
// `capacity` planes each. retarget() moves it to other planes of the box, so one small
// buffer can walk a thread's share of a grid window by window.
class Slab {
 public:
  Slab(const HaloPlan& box, std::int64_t begin, std::int64_t end, std::int64_t slots, std::int64_t capacity)
      : box_(box),
        begin_(begin),
        end_(end),
        plane_lanes_(box.extent()[1] * box.extent()[2] * box.lanes_per_point()),
        plan_({end - begin, box.extent()[1], box.extent()[2]}, box.radius(), box.lanes_per_point()),
        slot_lanes_((capacity + 2 * box.radius()) * box.padded_extent()[1] * box.padded_extent()[2] *
                    box.lanes_per_point()),
        capacity_(capacity),
        padded_(static_cast<std::size_t>(capacity > 0 ? slots * slot_lanes_ : 0), 0.0) {}

  bool empty() const { return begin_ == end_; }
  std::int64_t begin() const { return begin_; }
  std::int64_t end() const { return end_; }

  // Planes [begin, end) of the box from now on; end - begin must fit the capacity.
  void retarget(std::int64_t begin, std::int64_t end) {
    if (end - begin > capacity_) throw std::logic_error("slab: more planes than the buffer holds");
    begin_ = begin, end_ = end;
    plan_ = HaloPlan({end - begin, box_.extent()[1], box_.extent()[2]}, box_.radius(), box_.lanes_per_point());
  }

  // Copies the planes of the unpadded input grid that this slab reads, [begin - r,
  // end + r) within the box, into padded buffer `slot`, and zeroes those beyond the box
  // (the ghosts of a non-periodic edge; a face message, if any, overwrites them).
  void fill(std::int64_t slot, const double* grid) {
    const std::int64_t r = box_.radius();
    const std::int64_t low = std::max<std::int64_t>(0, begin_ - r);
    const std::int64_t high = std::min(box_.extent()[0], end_ + r);
    const Region planes{{low - begin_ + r, r, r}, {high - low, box_.extent()[1], box_.extent()[2]}};
    if (!compute_stood_in()) plan_.copy_in(planes, grid + low * plane_lanes_, padded(slot));
    for (std::int64_t x = begin_ - r; x < end_ + r; ++x)
      if (x < 0 || x >= box_.extent()[0]) zero_plane(slot, x);
  }

  // Fills the ghosts of the box's `face` that this slab reads from `message`, the face's
  // received points of one grid (times its Bloch phase, if any). The message holds the
  // face's region in C order, so a range of x-planes of it is one contiguous block.
  void unpack(std::int64_t slot, const Face& face, const double* message) {
    Region ghost;
    std::int64_t first_plane = 0;
    if (!ghost_part(face, ghost, first_plane)) return;
    const std::int64_t lanes_per_plane = face.lanes / face.ghost.extent[0];
    plan_.copy_face_in(face, ghost, message + first_plane * lanes_per_plane, padded(slot));
  }

  // The same ghosts straight from the unpadded input grid's `source` face, for a face
  // whose neighbour is this rank itself: the ghosts of one end of a periodic axis in one
  // box are the other end's surface points.
  void copy_from_grid(std::int64_t slot, const Face& face, const Face& source, const double* grid) {
    Region ghost;
    std::int64_t first_plane = 0;
    if (!ghost_part(face, ghost, first_plane)) return;
    Region from = source.send;  // padded coordinates of the box -> the unpadded grid's
    for (int axis = 0; axis < 3; ++axis) from.begin[axis] -= box_.radius();
    from.begin[0] += first_plane, from.extent[0] = ghost.extent[0];
    plan_.copy_face_from_grid(face, ghost, grid, box_.extent(), from, padded(slot));
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
  double* padded(std::int64_t slot) { return padded_.data() + slot * slot_lanes_; }

  // The part of `face`'s ghost region this slab reads, in the slab's padded coordinates,
  // and which x-plane of the face's region it starts at; false if the slab reads none.
  // (An x face's ghost planes lie beyond the box: a slab reads those within r of it.)
  bool ghost_part(const Face& face, Region& ghost, std::int64_t& first_plane) const {
    const std::int64_t r = box_.radius();
    ghost = face.ghost;  // padded coordinates; y and z are the slab's too
    if (face.axis == 0) {
      const std::int64_t first = face.ghost.begin[0] - r;  // box coordinates
      const std::int64_t low = std::max(first, begin_ - r), high = std::min(first + r, end_ + r);
      if (low >= high) return false;
      ghost.begin[0] = low - begin_ + r, ghost.extent[0] = high - low;
      first_plane = low - first;
    } else {
      ghost.begin[0] = r, ghost.extent[0] = end_ - begin_;
      first_plane = begin_;
    }
    return true;
  }

  // Zeroes the interior rows of plane x (box coordinates): all a star stencil reads there.
  void zero_plane(std::int64_t slot, std::int64_t x) {
    const std::int64_t r = box_.radius(), lanes = box_.lanes_per_point();
    const Index3& padded_extent = plan_.padded_extent();
    const std::int64_t row = box_.extent()[2] * lanes, stride_y = padded_extent[2] * lanes;
    double* plane = padded(slot) + (x - begin_ + r) * padded_extent[1] * stride_y;
    for (std::int64_t y = r; y < r + box_.extent()[1]; ++y) std::fill_n(plane + y * stride_y + r * lanes, row, 0.0);
  }

  const HaloPlan& box_;
  std::int64_t begin_, end_;
  std::int64_t plane_lanes_;  // lanes of one x-plane of an unpadded grid
  HaloPlan plan_;             // the slab as a box of its own, with no neighbours
  std::int64_t slot_lanes_;   // lanes of one padded buffer at full capacity
  std::int64_t capacity_;
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
  // two batches in flight), each for the largest batch; `held_grids` padded copies of a
  // thread's slab for steps that hold grids (0: the schedule never holds one). Allocated
  // and zeroed once.
  BatchBuffers(const ScheduleContext& context, int message_sets, std::int64_t held_grids)
      : context_(context),
        plan_(*context.plan),
        face_slot_(plan_.max_face_lanes() * context.batches.batch),
        whole_box_{Region{{0, 0, 0}, plan_.extent()}},
        send_(static_cast<std::size_t>(message_sets)),
        receive_(static_cast<std::size_t>(message_sets)),
        set_batch_(static_cast<std::size_t>(message_sets), -1) {
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
    // A grid that is not held is filled and computed window by window: a window of
    // planes padded just before they are computed stays in cache, so the padded copy is
    // written and read there instead of making a round trip to memory.
    const std::int64_t plane_bytes =
        plan_.padded_extent()[1] * plan_.padded_extent()[2] * plan_.lanes_per_point() * std::int64_t{sizeof(double)};
    // At least 4r planes, so that re-copying the r planes either side costs at most half.
    window_planes_ = std::max<std::int64_t>(4 * plan_.radius(), window_budget_bytes / plane_bytes - 2 * plan_.radius());
    std::int64_t begin = 0;
    slabs_.reserve(static_cast<std::size_t>(threads));
    windows_.reserve(static_cast<std::size_t>(threads));
    for (int thread = 0; thread < threads; ++thread) {
      const std::int64_t end =
          thread + 1 == threads ? n : static_cast<std::int64_t>(std::floor(n * (master + thread) / total));
      slabs_.emplace_back(plan_, begin, end, held_grids, held_grids > 0 ? end - begin : 0);
      const std::int64_t window = std::min(window_planes_, end - begin);
      windows_.emplace_back(plan_, begin, begin + window, 1, window);
      begin = end;
    }
    busy_.resize(slabs_.size());
    ticket_batch_.fill({-1, -1});
  }

  const ScheduleContext& context() const { return context_; }
  std::span<const Region> whole_box() const { return whole_box_; }

  // Packs the faces of `axes` of input grids first..first+count-1 (each face's grids one
  // after another, so one message per neighbour carries the whole batch) and lists the
  // messages. With parallel_pack the team shares the copying.
  template <std::size_t Axes>
  std::array<FaceMessage, 2 * Axes> pack(int set, const double* in, std::int64_t first, std::int64_t count,
                                         const std::array<int, Axes>& axes) {
    const int batch = tracing() ? number_batch(set, first) : -1;
    std::array<FaceMessage, 2 * Axes> messages;
    for (std::size_t next = 0; next < 2 * Axes; ++next) {
      const int index = 2 * axes[next / 2] + static_cast<int>(next % 2);
      const Face& face = plan_.faces()[index];
      // A face to this rank itself is no message: its ghosts are copied from the input
      // grid when it is unpacked (Slab::copy_from_grid).
      messages[next] = {remote(face) ? face.neighbour : MPI_PROC_NULL,
                        send(set, index),
                        receive(set, index),
                        face.lanes * count,
                        face.send_tag,
                        face.receive_tag};
    }
    // Units of work: one face of one grid, numbered face-major.
    const std::int64_t units = static_cast<std::int64_t>(2 * Axes) * count;
    auto copy = [&](int thread) {
      const TraceSpan span(context_.tracer, context_.trace_thread + thread, TraceKind::pack, batch);
      const int threads = context_.team.parallel_pack ? context_.team.threads() : 1;
      for (std::int64_t unit = units * thread / threads; unit < units * (thread + 1) / threads; ++unit) {
        const std::int64_t next = unit / count, k = unit % count;
        const int index = 2 * axes[next / 2] + static_cast<int>(next % 2);
        const Face& face = plan_.faces()[index];
        if (remote(face)) plan_.pack(face, in + (first + k) * plan_.grid_lanes(), send(set, index) + k * face.lanes);
      }
    };
    if (context_.team.parallel_pack && context_.team.threads() > 1)
      context_.team.team->run(copy);
    else
      copy(0);
    return messages;
  }

  // Packs the faces of `axes` of grids first..first+count-1 and starts their messages
  // (the papers' "post"); returns the transport's ticket.
  template <std::size_t Axes>
  int post(int set, const double* in, std::int64_t first, std::int64_t count, const std::array<int, Axes>& axes) {
    const auto messages = pack(set, in, first, count, axes);
    const TraceSpan span(context_.tracer, context_.trace_thread, TraceKind::post, batch_of_set(set));
    const int ticket = context_.transport->start(messages);
    if (tracing()) ticket_batch_[next_ticket_++ % ticket_batch_.size()] = {ticket, batch_of_set(set)};
    return ticket;
  }

  // Returns when the messages of `ticket` have arrived and its send buffers are free.
  void wait(int ticket) {
    const TraceSpan span(context_.tracer, context_.trace_thread, TraceKind::wait, batch_of_ticket(ticket));
    context_.transport->finish(ticket);
  }

  // For each input grid first..first+count-1, whose faces arrived in message set `set`:
  // the step's fill, unpack and compute, each thread on its slab. `in_flight`, the ticket
  // of a batch whose messages are under way, is tested every `progress` grids by thread 0,
  // or (master_waits) completed by thread 0 before it computes its share.
  void compute(int set, const double* in, double* out, std::int64_t first, std::int64_t count, const Step& step,
               int in_flight = -1) {
    const ScheduleContext& context = context_;
    const auto start = std::chrono::steady_clock::now();
    const int batch = batch_of_set(set);
    auto work = [&](int thread) {
      const bool master = thread == 0;
      const int trace_thread = context.trace_thread + thread;
      if (master && context.team.master_waits && in_flight >= 0) {
        const TraceSpan span(context.tracer, trace_thread, TraceKind::wait, batch_of_ticket(in_flight));
        context.transport->finish(in_flight);
      }
      const bool test = master && !context.team.master_waits && in_flight >= 0 && context.progress > 0;
      const auto busy_start = std::chrono::steady_clock::now();
      const auto index = static_cast<std::size_t>(thread);
      Slab& slab = slabs_[index];
      for (std::int64_t k = 0; k < count; ++k) {
        const double* grid_in = in + (first + k) * plan_.grid_lanes();
        double* grid_out = out + (first + k) * plan_.grid_lanes();
        if (step.hold)
          run_step(slab, k, step, set, k, grid_in, grid_out, trace_thread, batch);
        else
          for (std::int64_t begin = slab.begin(); begin < slab.end(); begin += window_planes_) {
            windows_[index].retarget(begin, std::min(begin + window_planes_, slab.end()));
            run_step(windows_[index], 0, step, set, k, grid_in, grid_out, trace_thread, batch);
          }
        if (test && (k + 1) % context.progress == 0) {
          const TraceSpan span(context.tracer, trace_thread, TraceKind::progress, batch_of_ticket(in_flight));
          context.transport->progress(in_flight);
        }
      }
      busy_[index] = seconds_since(busy_start);
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
  // Bytes of padded planes a window may hold: well within a shared L3 (32 MiB here), so
  // that a plane padded just before it is computed is still cached when it is read, and
  // a thread's padded copy is a few MiB whatever the grid size, not a whole grid.
  static constexpr std::int64_t window_budget_bytes = std::int64_t{4} << 20;

  // One step on one slab or window of grid k of the batch.
  void run_step(Slab& slab, std::int64_t slot, const Step& step, int set, std::int64_t k, const double* grid_in,
                double* grid_out, int trace_thread, int batch) {
    if (slab.empty()) return;
    if (step.fill || !step.axes.empty()) {
      const TraceSpan span(context_.tracer, trace_thread, TraceKind::unpack, batch);
      if (step.fill) slab.fill(slot, grid_in);
      for (int axis : step.axes)
        for (int side = 0; side < 2; ++side) {
          const int index = 2 * axis + side;
          const Face& face = plan_.faces()[index];
          if (remote(face))
            slab.unpack(slot, face, receive(set, index) + k * face.lanes);
          else if (face.neighbour == context_.rank)
            slab.copy_from_grid(slot, face, plan_.faces()[2 * axis + 1 - side], grid_in);
        }
    }
    const TraceSpan span(context_.tracer, trace_thread, TraceKind::compute, batch);
    for (const Region& region : step.regions) slab.compute(*context_.stencil, slot, region, grid_out);
  }

  // Whether a face's ghosts come in a message from another rank.
  bool remote(const Face& face) const { return face.neighbour != MPI_PROC_NULL && face.neighbour != context_.rank; }

  bool tracing() const { return context_.tracer != nullptr && context_.tracer->on(); }

  // Batches are numbered for the tracer as they are packed: an apply packs them in order
  // from grid 0 (serial-dims packs each batch once per axis), and a batch is known
  // afterwards by the message set it was packed into and the ticket it was posted with.
  int number_batch(int set, std::int64_t first) {
    if (first != packed_first_) packed_batch_ = first == 0 ? 0 : packed_batch_ + 1, packed_first_ = first;
    return set_batch_[static_cast<std::size_t>(set)] = packed_batch_;
  }
  int batch_of_set(int set) const { return tracing() ? set_batch_[static_cast<std::size_t>(set)] : -1; }
  int batch_of_ticket(int ticket) const {
    if (!tracing()) return -1;
    for (std::size_t back = 1; back <= ticket_batch_.size(); ++back) {  // the latest post first
      const auto& [posted, batch] = ticket_batch_[(next_ticket_ - back) % ticket_batch_.size()];
      if (posted == ticket) return batch;
    }
    return -1;
  }

  double* send(int set, int face) { return send_[set].data() + face * face_slot_; }
  double* receive(int set, int face) { return receive_[set].data() + face * face_slot_; }

  ScheduleContext context_;
  const HaloPlan& plan_;
  std::int64_t face_slot_;  // lanes of one face's slot: largest face x largest batch
  std::array<Region, 1> whole_box_;
  std::vector<std::vector<double>> send_;
  std::vector<std::vector<double>> receive_;
  std::vector<Slab> slabs_;    // one per thread: its planes of every grid
  std::vector<Slab> windows_;  // one per thread: a few of those planes at a time
  std::int64_t window_planes_ = 1;
  std::vector<double> busy_;  // per thread: seconds computing in the current step
  // For the tracer: the batch number of the last grid packed, and of each message set
  // and recent ticket.
  std::int64_t packed_first_ = -1;
  int packed_batch_ = -1;
  std::vector<int> set_batch_;
  std::array<std::pair<int, int>, 4> ticket_batch_{};  // (ticket, batch) of the last posts
  std::size_t next_ticket_ = 0;
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
