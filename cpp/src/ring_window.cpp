// RingWindow (the MiniMD slides' Hybrid-Advanced receive buffers). Positions are
// monotonic counts of 8-byte words since the window was made; a ring holds words at
// position % ring_words. A message is a length word then its data, padded to words.
//
// Per ring, three counters in the owner's window:
//   reserved  bumped by the origin with MPI_Fetch_and_op: where its next message goes;
//   arrived   bumped by the origin with MPI_Accumulate after the message's data are
//             complete at the target: the owner may read everything below it;
//   consumed  the owner's read index, published with MPI_Accumulate(MPI_REPLACE): the
//             origin may overwrite everything below consumed + ring_words.
// Only atomic operations touch the counters remotely (MPI allows concurrent accumulates
// to one location, not a put beside them); the data are written with MPI_Put and made
// complete with MPI_Win_flush before the arrival counter moves, as MPI orders no put
// before a later accumulate.
#include "hybridfd/ring_window.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "format.hpp"
#include "hybridfd/errors.hpp"

namespace hybridfd {

RingWindow::RingWindow(MPI_Comm comm, int rings, std::int64_t ring_bytes, bool poll_with_atomics)
    : comm_(comm), rings_(rings) {
  const auto problem = find_problem([&] {
    if (rings < 1) throw ValueError(detail::concat("a RingWindow needs at least one ring, not ", rings));
    if (ring_bytes < 16)
      throw ValueError(detail::concat("ring of ", ring_bytes,
                                      " bytes is too small: it needs 8 bytes of length header and "
                                      "8 of data at least"));
  });
  // Every rank's window holds the same rings (a target's ring is found by its index); a
  // rank that refused its arguments alone would leave the others in the allreduce below.
  agree_on_problems(comm, problem, rings, "number of rings");
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
  ring_words_ = ring_bytes / 8;
  MPI_Allreduce(MPI_IN_PLACE, &ring_words_, 1, MPI_INT64_T, MPI_MAX, comm);
  ring_stride_ = 24 + static_cast<MPI_Aint>((ring_words_ + 7) / 8 * 8);
  MPI_Win_allocate(static_cast<MPI_Aint>(rings) * ring_stride_ * 8, 8, MPI_INFO_NULL, comm, &base_, &window_);
  std::fill_n(base_, static_cast<std::size_t>(rings) * static_cast<std::size_t>(ring_stride_), std::int64_t{0});
  int* model = nullptr;
  int found = 0;
  MPI_Win_get_attr(window_, MPI_WIN_MODEL, &model, &found);
  polls_local_memory_ = found && *model == MPI_WIN_UNIFIED && !poll_with_atomics;
  read_.assign(static_cast<std::size_t>(rings), 0);
  // Every rank's counters are zero before any origin may touch them.
  MPI_Barrier(comm);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, window_);
}

RingWindow::~RingWindow() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  MPI_Win_unlock_all(window_);
  MPI_Win_free(&window_);
}

std::int64_t& RingWindow::known_consumed(int target, int ring) {
  for (Known& known : known_)
    if (known.target == target && known.ring == ring) return known.consumed;
  known_.push_back({target, ring, 0});  // once per (target, ring): steady state allocates nothing
  return known_.back().consumed;
}

void RingWindow::send(std::span<const OutgoingMessage> messages) {
  for (const OutgoingMessage& message : messages) {
    if (message.ring < 0 || message.ring >= rings_)
      throw ValueError(detail::concat("ring ", message.ring, " out of range: this RingWindow has ", rings_, " rings"));
    if (message.target < 0 || message.target >= size_ || message.target == rank_)
      throw ValueError(detail::concat("target rank ", message.target, " must be another rank of the ", size_,
                                      " in the communicator (this is rank ", rank_, ")"));
    if (message.bytes < 0 || message.bytes > largest_message())
      throw ValueError(detail::concat("message of ", message.bytes, " bytes does not fit a ring of ", ring_words_ * 8,
                                      " bytes (at most ", largest_message(), " per message)"));
  }
  const std::size_t count = messages.size();
  positions_.resize(count), headers_.resize(count), words_.resize(count);
  // The atomic that gets the target address from the target (one round trip for all).
  for (std::size_t i = 0; i < count; ++i) {
    const OutgoingMessage& message = messages[i];
    words_[i] = 1 + (message.bytes + 7) / 8;
    headers_[i] = message.bytes;
    MPI_Fetch_and_op(&words_[i], &positions_[i], MPI_INT64_T, message.target, reserved_at(message.ring), MPI_SUM,
                     window_);
  }
  MPI_Win_flush_all(window_);
  for (std::size_t i = 0; i < count; ++i) {
    const OutgoingMessage& message = messages[i];
    const std::int64_t position = positions_[i];
    // Flow control: the words up to position + words must have been consumed in the
    // previous lap. The wait ends when the target receives from this ring (see the
    // contract in the header); the last fetched read index spares a round trip.
    std::int64_t& consumed = known_consumed(message.target, message.ring);
    const std::int64_t needed = position + words_[i] - ring_words_;
    if (consumed < needed) {
      while (true) {
        std::int64_t nothing = 0;
        MPI_Fetch_and_op(&nothing, &consumed, MPI_INT64_T, message.target, consumed_at(message.ring), MPI_NO_OP,
                         window_);
        MPI_Win_flush(message.target, window_);
        if (consumed >= needed) break;
        ++waits_for_room_;
        idle();
      }
    }
    const MPI_Aint ring = data_at(message.ring);
    const std::int64_t start = position % ring_words_;
    MPI_Put(&headers_[i], 1, MPI_INT64_T, message.target, ring + start, 1, MPI_INT64_T, window_);
    // The data may wrap around the ring's end: then two puts.
    const std::int64_t first = (start + 1) % ring_words_;
    const std::int64_t first_bytes = std::min(message.bytes, (ring_words_ - first) * 8);
    const auto* bytes = static_cast<const char*>(message.data);
    if (first_bytes > 0)
      MPI_Put(bytes, static_cast<int>(first_bytes), MPI_BYTE, message.target, ring + first,
              static_cast<int>(first_bytes), MPI_BYTE, window_);
    if (message.bytes > first_bytes)
      MPI_Put(bytes + first_bytes, static_cast<int>(message.bytes - first_bytes), MPI_BYTE, message.target, ring,
              static_cast<int>(message.bytes - first_bytes), MPI_BYTE, window_);
  }
  MPI_Win_flush_all(window_);  // the data are complete at their targets
  for (std::size_t i = 0; i < count; ++i)
    MPI_Accumulate(&words_[i], 1, MPI_INT64_T, messages[i].target, arrived_at(messages[i].ring), 1, MPI_INT64_T,
                   MPI_SUM, window_);
  MPI_Win_flush_all(window_);  // the signals are delivered; words_ may be reused
}

std::int64_t RingWindow::read_counter(MPI_Aint displacement) {
  if (polls_local_memory_) {
    // Public and private copies are one memory: a memory barrier, then a load that the
    // origins' atomic updates of this aligned word cannot tear.
    MPI_Win_sync(window_);
    return std::atomic_ref<std::int64_t>(base_[displacement]).load(std::memory_order_acquire);
  }
  std::int64_t nothing = 0, value = 0;
  MPI_Fetch_and_op(&nothing, &value, MPI_INT64_T, rank_, displacement, MPI_NO_OP, window_);
  MPI_Win_flush(rank_, window_);
  return value;
}

bool RingWindow::test(std::span<IncomingMessage> messages) {
  bool all = true;
  for (IncomingMessage& message : messages) {
    if (message.received()) continue;
    const int ring = message.ring;
    std::int64_t& read = read_[static_cast<std::size_t>(ring)];
    if (read_counter(arrived_at(ring)) <= read) {
      all = false;
      continue;
    }
    // Arrived: the origin's flush completed the data before the counter moved; a sync
    // now orders the reads of the data after the read of the counter (and, in the
    // separate model, brings the public copy into this rank's view).
    MPI_Win_sync(window_);
    const std::int64_t* data = base_ + data_at(ring);
    const std::int64_t start = read % ring_words_;
    const std::int64_t bytes = data[start];
    if (bytes > message.room)
      throw ValueError(detail::concat("message of ", bytes, " bytes in ring ", ring, " does not fit the ", message.room,
                                      " bytes given to receive it"));
    const std::int64_t first = (start + 1) % ring_words_;
    const std::int64_t first_bytes = std::min(bytes, (ring_words_ - first) * 8);
    auto* into = static_cast<char*>(message.data);
    std::memcpy(into, data + first, static_cast<std::size_t>(first_bytes));
    std::memcpy(into + first_bytes, data, static_cast<std::size_t>(bytes - first_bytes));
    message.bytes = bytes;
    read += 1 + (bytes + 7) / 8;
    // Publishes the read index atomically (the origin fetches it atomically) and
    // completes it at once, so a waiting origin sees the room.
    MPI_Accumulate(&read, 1, MPI_INT64_T, rank_, consumed_at(ring), 1, MPI_INT64_T, MPI_REPLACE, window_);
    MPI_Win_flush(rank_, window_);
  }
  return all;
}

void RingWindow::receive(std::span<IncomingMessage> messages) {
  while (!test(messages)) idle();
}

void RingWindow::idle() const {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
  sched_yield();
}

}  // namespace hybridfd
