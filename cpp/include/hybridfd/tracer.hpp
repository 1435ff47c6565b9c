// Tracer: what each thread of each rank did when, during an Operator's applies
// (docs/design.md; the communication and computation profile of the GPAW journal, Sect.
// 7.1, Fig. 7.1).
//
// Events go into buffers allocated when tracing starts, one per thread, each written by its
// own thread only: no allocation, no lock and no Python while an apply runs. A full buffer
// counts what it drops instead of growing. Off (the default), a traced step costs one
// predictable branch. Times come from std::chrono::steady_clock and are put on rank 0's
// clock by an offset measured when tracing starts (Cristian's ping-pong: the reply with the
// shortest round trip; the error is at most half that round trip).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace hybridfd {

// What a thread was doing. The first four move halos ("communication"), the rest compute.
enum class TraceKind : std::int32_t {
  pack,      // copying a batch's faces into its send buffers
  post,      // starting a batch's messages (Transport::start)
  wait,      // waiting for a batch's messages (Transport::finish)
  progress,  // testing messages in flight between grids being computed
  unpack,    // copying a grid and the received ghosts it reads into the padded buffer
  compute,   // the stencil (Kernel) on a grid or part of one
  apply,     // a whole Operator::apply (thread 0); every other event lies within one
};
inline constexpr int trace_kind_count = 7;
std::string_view trace_kind_name(TraceKind kind);

struct TraceEvent {
  std::int64_t start_ns = 0;  // since the tracer's origin, on this rank's clock
  std::int64_t end_ns = 0;
  std::int32_t batch = -1;  // the batch's number within its apply (-1: no batch, e.g. apply)
  TraceKind kind = TraceKind::apply;
  std::int32_t messages = 0;  // post: the messages to other ranks it started
};

class Tracer {
 public:
  using Clock = std::chrono::steady_clock;

  // How this rank's clock relates to rank 0's, measured by start().
  struct ClockSync {
    std::int64_t shift_ns = 0;        // add to an event's times to put them on rank 0's
                                      // timeline, whose 0 is rank 0's origin
    std::int64_t uncertainty_ns = 0;  // half the best round trip: the shift's error bound
  };

  // Collective over comm. Allocates `threads` buffers of `capacity` events each (the
  // buffers of an earlier start are reused when large enough), forgets earlier events,
  // measures the clock offset to rank 0 and turns tracing on. Never during an apply.
  // Throws ValueError for threads < 1 or capacity < 1.
  void start(MPI_Comm comm, int threads, std::int64_t capacity);
  // Turns tracing off; the events stay until the next start.
  void stop() { on_ = false; }
  bool on() const { return on_; }

  // Called by thread `thread` only, while tracing is on.
  void record(int thread, TraceKind kind, int batch, Clock::time_point start, Clock::time_point end,
              int messages = 0) noexcept {
    Buffer& buffer = buffers_[static_cast<std::size_t>(thread)];
    if (buffer.size == capacity_) {
      ++buffer.dropped;
      return;
    }
    buffer.events[static_cast<std::size_t>(buffer.size++)] = {
        std::chrono::duration_cast<std::chrono::nanoseconds>(start - origin_).count(),
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - origin_).count(), batch, kind, messages};
  }

  int threads() const { return static_cast<int>(buffers_.size()); }
  std::int64_t capacity() const { return capacity_; }
  std::span<const TraceEvent> events(int thread) const;
  // Events thread `thread` could not record because its buffer was full.
  std::int64_t dropped(int thread) const;
  const ClockSync& clock_sync() const { return sync_; }

 private:
  // One cache line or more per thread, so that threads recording at once never share one.
  struct alignas(64) Buffer {
    std::vector<TraceEvent> events;
    std::int64_t size = 0;
    std::int64_t dropped = 0;
  };

  bool on_ = false;
  std::int64_t capacity_ = 0;
  Clock::time_point origin_{};
  ClockSync sync_;
  std::vector<Buffer> buffers_;
};

// Times its own lifetime as one event of `thread`, if the tracer is on (one branch if not).
class TraceSpan {
 public:
  TraceSpan(Tracer* tracer, int thread, TraceKind kind, int batch) noexcept
      : tracer_(tracer != nullptr && tracer->on() ? tracer : nullptr), thread_(thread), batch_(batch), kind_(kind) {
    if (tracer_ != nullptr) start_ = Tracer::Clock::now();
  }
  ~TraceSpan() {
    if (tracer_ != nullptr) tracer_->record(thread_, kind_, batch_, start_, Tracer::Clock::now(), messages_);
  }
  // A post's count of messages to other ranks, recorded with the event.
  void count_messages(int messages) noexcept { messages_ = messages; }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  Tracer* tracer_;
  int thread_;
  int batch_;
  TraceKind kind_;
  int messages_ = 0;
  Tracer::Clock::time_point start_{};
};

}  // namespace hybridfd
