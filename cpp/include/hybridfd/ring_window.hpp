// RingWindow: the receive buffers of the MiniMD slides' Hybrid-Advanced design in
// portable MPI-3 RMA ("cyclic buffer management with write and read index"; "atomic
// operation to get target address from target process"; "target process polls on local
// receive buffer"). Every rank exposes `rings` cyclic buffers in one MPI window, inside a
// passive-target epoch (MPI_Win_lock_all) that lasts as long as the RingWindow. Messages
// carry their own length, so a receiver need not know a message's size in advance (the
// irregular data of MiniMD: particles).
//
// Contract: each ring of a rank has one origin at a time (e.g. ring k of a rank is fed
// by its neighbour in direction k); messages of a ring are received in the order sent.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>
#include <vector>

namespace hybridfd {

struct OutgoingMessage {
  int target = MPI_PROC_NULL;  // rank in the RingWindow's communicator; not this rank
  int ring = 0;
  const void* data = nullptr;
  std::int64_t bytes = 0;
};

struct IncomingMessage {
  int ring = 0;
  void* data = nullptr;     // where the message is copied
  std::int64_t room = 0;    // bytes `data` can hold
  std::int64_t bytes = -1;  // the message's size once received; -1 before
  bool received() const { return bytes >= 0; }
};

class RingWindow {
 public:
  // Collective over comm. Every rank gets `rings` rings of `ring_bytes` bytes each (the
  // largest any rank asks for, as origins place their puts by it). Throws ValueError for
  // rings < 1 or ring_bytes < 16. `poll_with_atomics` reads the counters with MPI atomics
  // even where the window's memory model would allow plain loads.
  RingWindow(MPI_Comm comm, int rings, std::int64_t ring_bytes, bool poll_with_atomics = false);
  // Collective (MPI_Win_free). Every message sent must have been received.
  ~RingWindow();
  RingWindow(const RingWindow&) = delete;
  RingWindow& operator=(const RingWindow&) = delete;

  int rings() const { return rings_; }
  // The largest message a ring holds: its bytes less the 8-byte length header.
  std::int64_t largest_message() const { return (ring_words_ - 1) * 8; }

  // Writes each message into its target's ring: reserves room with MPI_Fetch_and_op on
  // the target's write index, waits while the ring lacks room (flow control: the target
  // has not yet received older messages), puts the length and data, flushes, then adds
  // the message's size to the target's arrival counter with an atomic MPI_Accumulate.
  // Returns when every message's data may be reused. Throws ValueError, before any RMA
  // call, for a ring out of range, this rank as target, or a message too large.
  //
  // A wait for room ends once the target receives from that ring. So a caller must not
  // send to a rank whose receive of that ring waits, directly or through other ranks,
  // for a message this rank would send only after this send() returns. Two ways to obey
  // it: rings large enough for everything that can be unreceived at once (the rma-notify
  // transport sizes them so; it never waits), or ranks that only send to ranks that do
  // not send back before receiving (the slow-consumer test).
  void send(std::span<const OutgoingMessage> messages);

  // Copies each listed ring's next message that has fully arrived into its `data` and
  // marks it received; returns true when every listed message is received. Throws
  // ValueError if a message is larger than its `room` (it stays in the ring).
  bool test(std::span<IncomingMessage> messages);
  // Waits until every listed message is received (test() in a loop that yields the CPU
  // and lets MPI progress). Ends once each ring's origin has sent its message.
  void receive(std::span<IncomingMessage> messages);
  // Lets MPI progress and gives the CPU away: what every wait loop does between polls,
  // so busy ranks oversubscribing a core do not starve the rank they wait for.
  void idle() const;

  // How often send() found a ring full and waited for its target to receive.
  std::int64_t waits_for_room() const { return waits_for_room_; }
  // Polling reads local memory after MPI_Win_sync where the window is MPI_WIN_UNIFIED;
  // else (separate public and private copies, or asked for) it reads each counter with
  // MPI_Fetch_and_op on this rank's own window.
  bool polls_local_memory() const { return polls_local_memory_; }

 private:
  // Window displacements, in 8-byte words, of ring `ring`'s counters and data. Counters
  // sit on cache lines of their own: origins update them while the owner polls.
  MPI_Aint reserved_at(int ring) const { return ring * ring_stride_; }
  MPI_Aint arrived_at(int ring) const { return ring * ring_stride_ + 8; }
  MPI_Aint consumed_at(int ring) const { return ring * ring_stride_ + 16; }
  MPI_Aint data_at(int ring) const { return ring * ring_stride_ + 24; }
  std::int64_t read_counter(MPI_Aint displacement);
  // Known room in (target, ring): the target's read index as last fetched.
  std::int64_t& known_consumed(int target, int ring);

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  int rings_;
  std::int64_t ring_words_ = 0;
  MPI_Aint ring_stride_ = 0;
  bool polls_local_memory_ = true;
  std::int64_t* base_ = nullptr;
  MPI_Win window_ = MPI_WIN_NULL;
  std::vector<std::int64_t> read_;  // per own ring: its read index (words)
  struct Known {
    int target, ring;
    std::int64_t consumed;
  };
  std::vector<Known> known_;
  // Per message of a send(): where it was reserved, its header and size in words (kept
  // until the flush that completes the puts and signals reading them).
  std::vector<std::int64_t> positions_, headers_, words_;
  std::int64_t waits_for_room_ = 0;
};

}  // namespace hybridfd
