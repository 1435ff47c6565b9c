// What every schedule does with a batch of grids, in one place: message buffers, packing
// faces straight from the user's grids, compute, shared among the threads of a team. A
// schedule only decides the order. Private to the core.
//
// Faces are packed from the unpadded input and the stencil reads the input grid and the
// received messages where they are (kernel.hpp, BoxInput): no grid is copied into a
// padded buffer, so a grid costs one read and one write of memory, and a batch of b
// grids costs b grids' faces of message buffers. A face whose neighbour is this rank
// itself (a periodic axis in one box) is no message at all: its ghosts are the grid's
// other end, read in place.
//
// A team shares every grid by x-slabs (the masteronly models): each thread computes its
// slab of every grid, reading whatever rows its stencil needs, so threads never wait for
// one another inside a batch (no barrier per grid). One thread is one slab: the whole box.
//
// The Tracer's events are recorded here too, where the PhaseTimes are: pack, post and wait
// of each batch, the phasing of its ghosts (unpack, Bloch phases only) and each thread's
// compute of each grid.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "hybridfd/halo_plan.hpp"
#include "hybridfd/kernel.hpp"
#include "hybridfd/schedule.hpp"

namespace hybridfd::detail {

// Sets of the plan's directions (halo_plan.hpp; bit t: tag t).
inline constexpr DirectionSet every_direction = hybridfd::every_direction, no_direction = 0;
// The pure z faces: what a z-whole interior reads beyond the box (overlap-xy).
inline constexpr DirectionSet z_faces = 0b110000;

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Message buffer lanes, not zeroed: every lane is written (packed, received, phased)
// before it is read. Each page is touched once here, so the system maps it now, at
// construction, rather than in the first apply (which the tuner times); unlike zeroing
// the whole buffer this costs nothing when the allocator hands back memory that an
// earlier Operator freed.
class Lanes {
 public:
  Lanes() = default;
  explicit Lanes(std::int64_t lanes) : data_(lanes > 0 ? new double[static_cast<std::size_t>(lanes)] : nullptr) {
    constexpr std::int64_t page = 4096 / sizeof(double);
    for (std::int64_t lane = 0; lane < lanes; lane += page) data_[static_cast<std::size_t>(lane)] = 0.0;
  }
  double* data() { return data_.get(); }

 private:
  std::unique_ptr<double[]> data_;
};

class BatchBuffers {
 public:
  // What compute() does with each grid of a batch.
  struct Step {
    std::span<const Region> regions;         // what to compute, in box coordinates
    DirectionSet arrived = every_direction;  // the directions whose messages from other ranks
                                             // have arrived: the regions read no others
  };

  // `message_sets` independent sets of send and receive buffers (double buffering has
  // two batches in flight), each with a slot for the largest batch of every face that
  // carries a message, and no more: faces to this rank itself or to no one carry none
  // (at 96^3, batch 64 and x cut alone, 38 MB per set instead of 113 MB for six slots
  // of the largest face, which made building an Operator cost half a 64-grid apply).
  // Allocated once, each page touched (Lanes), so an apply never meets a page not yet
  // mapped.
  BatchBuffers(const ScheduleContext& context, int message_sets)
      : context_(context),
        plan_(*context.plan),
        whole_box_{Region{{0, 0, 0}, plan_.extent()}},
        send_(static_cast<std::size_t>(message_sets)),
        receive_(static_cast<std::size_t>(message_sets)),
        phased_(static_cast<std::size_t>(message_sets), no_direction),
        set_batch_(static_cast<std::size_t>(message_sets), -1) {
    const Index3& n = plan_.extent();
    const std::int64_t lanes = plan_.lanes_per_point();
    // Faces whose neighbour is this rank itself read their ghosts from the grid's other
    // end; with a Bloch phase they need a phased copy (complex grids only), in a slot of
    // their own.
    std::int64_t message_lanes = 0, self_lanes = 0;
    slot_.resize(plan_.faces().size());
    messages_.resize(plan_.faces().size());
    for (std::size_t index = 0; index < plan_.faces().size(); ++index) {
      const Face& face = plan_.faces()[index];
      const std::int64_t slot = face.lanes * context.batches.batch;
      if (remote(face))
        slot_[index] = message_lanes, message_lanes += slot;
      else if (lanes == 2 && face.neighbour == context.rank)
        slot_[index] = self_lanes, self_lanes += slot;
    }
    for (int set = 0; set < message_sets; ++set) {
      send_[set] = Lanes(message_lanes);
      receive_[set] = Lanes(message_lanes);
    }
    self_phased_ = Lanes(self_lanes);
    zeros_.resize(static_cast<std::size_t>(std::max<std::int64_t>(n[2], plan_.radius()) * lanes), 0.0);
    // Thread 0 weighs master_share, the others 1: slab bounds at the cumulative weights.
    const TeamWork& team = context.team;
    const int threads = team.threads();
    const double master = threads == 1 ? 1.0 : team.master_share;
    const double total = master + (threads - 1);
    std::int64_t begin = 0;
    for (int thread = 0; thread < threads; ++thread) {
      const std::int64_t end =
          thread + 1 == threads ? n[0] : static_cast<std::int64_t>(std::floor(n[0] * (master + thread) / total));
      slabs_.push_back({begin, end});
      begin = end;
    }
    busy_.resize(slabs_.size());
    ticket_batch_.fill({-1, -1});
  }

  const ScheduleContext& context() const { return context_; }
  std::span<const Region> whole_box() const { return whole_box_; }

  // Packs the faces of `directions` of input grids first..first+count-1 (each face's
  // grids one after another, so one message per neighbour carries the whole batch) and
  // lists the messages. With parallel_pack the team shares the copying.
  std::span<const FaceMessage> pack(int set, const double* in, std::int64_t first, std::int64_t count,
                                    DirectionSet directions) {
    const int batch = tracing() ? number_batch(set, first) : -1;
    std::size_t listed = 0;
    for (std::size_t index = 0; index < plan_.faces().size(); ++index) {
      const Face& face = plan_.faces()[index];
      if (!(directions & (DirectionSet{1} << face.send_tag))) continue;
      // A face to this rank itself is no message: its ghosts are read from the grid's
      // other end (input_of).
      chosen_[listed] = index;
      messages_[listed++] = {remote(face) ? face.neighbour : MPI_PROC_NULL,
                             send(set, index),
                             receive(set, index),
                             face.lanes * count,
                             face.send_tag,
                             face.receive_tag};
    }
    // Units of work: one face of one grid, numbered face-major.
    const auto units = static_cast<std::int64_t>(listed) * count;
    auto copy = [&](int thread) {
      const TraceSpan span(context_.tracer, context_.trace_thread + thread, TraceKind::pack, batch);
      const int threads = context_.team.parallel_pack ? context_.team.threads() : 1;
      for (std::int64_t unit = units * thread / threads; unit < units * (thread + 1) / threads; ++unit) {
        const std::size_t index = chosen_[static_cast<std::size_t>(unit / count)];
        const std::int64_t k = unit % count;
        const Face& face = plan_.faces()[index];
        if (remote(face)) plan_.pack(face, in + (first + k) * plan_.grid_stride(), send(set, index) + k * face.lanes);
      }
    };
    if (context_.team.parallel_pack && context_.team.threads() > 1)
      context_.team.team->run(copy);
    else
      copy(0);
    std::int64_t packed = 0;
    for (std::size_t next = 0; next < listed; ++next)
      if (messages_[next].neighbour != MPI_PROC_NULL) packed += messages_[next].lanes;
    charge_packing(packed);
    return {messages_.data(), listed};
  }

  // Packs the faces of `directions` of grids first..first+count-1 and starts their
  // messages (the papers' "post"); returns the transport's ticket.
  int post(int set, const double* in, std::int64_t first, std::int64_t count, DirectionSet directions) {
    const auto messages = pack(set, in, first, count, directions);
    phased_[static_cast<std::size_t>(set)] &= ~directions;
    TraceSpan span(context_.tracer, context_.trace_thread, TraceKind::post, batch_of_set(set));
    int to_others = 0;
    for (const FaceMessage& message : messages) to_others += message.neighbour != MPI_PROC_NULL ? 1 : 0;
    span.count_messages(to_others);
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
  // the step's regions, each thread on its x-slab, read straight from the input grid and
  // the received messages (no padded copy). `in_flight`, the ticket of a batch whose
  // messages are under way, is tested every `progress` grids by thread 0, or
  // (master_waits) completed by thread 0 before it computes its share.
  void compute(int set, const double* in, double* out, std::int64_t first, std::int64_t count, const Step& step,
               int in_flight = -1) {
    if (context_.halo_work) return fill_ghosts(set, const_cast<double*>(in), first, count, step);
    const ScheduleContext& context = context_;
    const auto start = std::chrono::steady_clock::now();
    const int batch = batch_of_set(set);
    prepare_ghosts(set, in, first, count, step.arrived, batch);
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
      const auto [slab_begin, slab_end] = slabs_[index];
      for (std::int64_t k = 0; k < count; ++k) {
        const double* grid_in = in + (first + k) * plan_.grid_lanes();
        double* grid_out = out + (first + k) * plan_.grid_lanes();
        if (slab_begin < slab_end) {  // a thread with master_share 0 computes nothing
          const BoxInput input = input_of(set, k, grid_in);
          const TraceSpan span(context.tracer, trace_thread, TraceKind::compute, batch);
          for (const Region& region : step.regions) {
            const std::int64_t low = std::max(region.begin[0], slab_begin);
            const std::int64_t high = std::min(region.begin[0] + region.extent[0], slab_end);
            if (low >= high) continue;
            Region mine = region;
            mine.begin[0] = low, mine.extent[0] = high - low;
            apply_stencil(*context.stencil, plan_, input, mine, grid_out);
          }
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

  // The common step: whole boxes, all ghosts arrived.
  void compute_batch(int set, const double* in, double* out, std::int64_t first, std::int64_t count,
                     int in_flight = -1) {
    compute(set, in, out, first, count, Step{.regions = whole_box()}, in_flight);
  }

 private:
  // Where the stencil finds grid k of the batch in message set `set` and its ghosts: the
  // input grid itself; per face a received message, the grid's other end (a neighbour
  // that is this rank: a periodic axis in one box), its phased copy, or zeros (no
  // neighbour: GPAW's zero boundary).
  BoxInput input_of(int set, std::int64_t k, const double* grid) {
    const Index3& n = plan_.extent();
    const std::int64_t lanes = plan_.lanes_per_point();
    const std::int64_t row = n[2] * lanes, stride_x = n[1] * row;
    BoxInput input;
    input.box = {grid, stride_x, row};
    for (std::size_t index = 0; index < plan_.faces().size(); ++index) {
      const Face& face = plan_.faces()[index];
      Rows& rows = input.block(face.send_tag);
      // A block's ghosts in C order, as a message carries them.
      const Index3& e = face.ghost.extent;
      const Rows message_layout{nullptr, e[1] * e[2] * lanes, e[2] * lanes};
      if (remote(face)) {
        rows = message_layout;
        rows.first = receive(set, index) + k * face.lanes;
      } else if (face.neighbour == context_.rank && face.phased) {
        rows = message_layout;
        rows.first = self_phased(index) + k * face.lanes;
      } else if (face.neighbour == context_.rank) {
        // This rank's other end: what it sends the opposite way.
        const Region& source = plan_.faces()[plan_.opposite(index)].send;
        const Offset& w = plan_.widths();
        rows = {grid + (source.begin[0] - w[0]) * stride_x + (source.begin[1] - w[1]) * row +
                    (source.begin[2] - w[2]) * lanes,
                stride_x, row};
      } else {
        rows = {zeros_.data(), 0, 0};
      }
    }
    return input;
  }

  // Ghosts that need work before the stencil reads them: received faces with a Bloch
  // phase are multiplied by it in place, once per batch; faces to this rank itself with a
  // phase are copied, phased, from the grids' other ends. Done by the calling thread
  // before the team computes (face-sized work).
  void prepare_ghosts(int set, const double* in, std::int64_t first, std::int64_t count, DirectionSet arrived,
                      int batch) {
    bool any = false;
    for (const Face& face : plan_.faces()) any = any || face.phased;
    if (!any) return;
    const TraceSpan span(context_.tracer, context_.trace_thread, TraceKind::unpack, batch);
    for (std::size_t index = 0; index < plan_.faces().size(); ++index) {
      const Face& face = plan_.faces()[index];
      if (!face.phased) continue;
      const DirectionSet direction = DirectionSet{1} << face.send_tag;
      if (remote(face) && (arrived & ~phased_[static_cast<std::size_t>(set)] & direction))
        plan_.apply_phase(face, receive(set, index), count);
      else if (face.neighbour == context_.rank)
        for (std::int64_t k = 0; k < count; ++k)
          plan_.ghosts_from_grid(face, plan_.faces()[plan_.opposite(index)], in + (first + k) * plan_.grid_lanes(),
                                 self_phased(index) + k * face.lanes);
    }
    phased_[static_cast<std::size_t>(set)] |= arrived;
  }

  // The exchange on its own: once all of a batch's messages are in (a step that computes
  // before that, overlap's interior, has nothing to do), its ghosts are written into the
  // padded grids (the team shares the copying, face by grid, as in pack), times their
  // phases, and the caller's compute is handed the batch.
  void fill_ghosts(int set, double* grids, std::int64_t first, std::int64_t count, const Step& step) {
    if (step.arrived != every_direction) return;
    const auto start = std::chrono::steady_clock::now();
    const int batch = batch_of_set(set);
    const std::int64_t stride = plan_.grid_stride();
    const auto faces = static_cast<std::int64_t>(plan_.faces().size());
    const std::int64_t units = faces * count;
    auto copy = [&](int thread) {
      const TraceSpan span(context_.tracer, context_.trace_thread + thread, TraceKind::unpack, batch);
      const int threads = context_.team.threads();
      for (std::int64_t unit = units * thread / threads; unit < units * (thread + 1) / threads; ++unit) {
        const auto index = static_cast<std::size_t>(unit / count);
        const std::int64_t k = unit % count;
        const Face& face = plan_.faces()[index];
        double* grid = grids + (first + k) * stride;
        if (remote(face))
          plan_.unpack(face, receive(set, index) + k * face.lanes, grid);
        else if (face.neighbour == context_.rank)
          plan_.ghosts_in_place(face, plan_.faces()[plan_.opposite(index)], grid);
        else
          plan_.zero_ghosts(face, grid);
      }
    };
    if (context_.team.threads() > 1)
      context_.team.team->run(copy);
    else
      copy(0);
    const HaloWork& work = *context_.halo_work;
    if (work.compute) {
      const std::int64_t offset = (grids - work.base) / stride + first;
      const TraceSpan span(context_.tracer, context_.trace_thread, TraceKind::compute, batch);
      work.compute(offset, offset + count);
    }
    if (PhaseTimes* times = context_.phase_times) {
      times->compute_phases += seconds_since(start);
      times->thread_busy += seconds_since(start);
    }
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

  // A face's slot; only a face that carries a message (send, receive) or, complex, whose
  // neighbour is this rank (self_phased) has one, and only such a slot is ever read or
  // written (the others' messages go to MPI_PROC_NULL).
  double* send(int set, std::size_t face) { return send_[static_cast<std::size_t>(set)].data() + slot_[face]; }
  double* self_phased(std::size_t face) { return self_phased_.data() + slot_[face]; }
  double* receive(int set, std::size_t face) { return receive_[static_cast<std::size_t>(set)].data() + slot_[face]; }

  ScheduleContext context_;
  const HaloPlan& plan_;
  std::vector<std::int64_t> slot_;                     // per face: its slot's first lane (its lanes x largest batch)
  std::vector<FaceMessage> messages_;                  // the messages of the latest pack
  std::array<std::size_t, halo_directions> chosen_{};  // their faces' indices
  std::array<Region, 1> whole_box_;
  std::vector<Lanes> send_;
  std::vector<Lanes> receive_;
  std::vector<DirectionSet> phased_;                          // per set: received blocks that carry their phases
  std::vector<double> zeros_;                                 // a row of zeros: the ghosts beyond a non-periodic edge
  Lanes self_phased_;                                         // phased ghosts of faces to this rank itself
  std::vector<std::pair<std::int64_t, std::int64_t>> slabs_;  // per thread: its x-planes [begin, end)
  std::vector<double> busy_;                                  // per thread: seconds computing in the current step
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
