// partitioned: MPI-4 partitioned communication with one partition per thread of the
// multiple model (beyond the GPAW papers; what Rabenseifner's "multiple" threads look
// like to MPI-4). Per direction of travel there is one MPI_Psend_init to the neighbour
// that way and one MPI_Precv_init from the neighbour the other way, shared by the rank's
// threads: thread t packs its faces into partition t and marks it with MPI_Pready, and
// polls MPI_Parrived for partition t of the receive. The library sees one message per
// neighbour and direction, however many threads fill it.
//
// Rounds. Thread t's k-th batch in direction d fills partition t of that direction's
// round k, whichever batch the other threads are at (every rank splits G among threads
// the same way, so thread t's k-th message meets thread t's on the neighbour). A round
// uses buffer set k % max_in_flight; it is started (MPI_Start) by the first thread that
// needs it, once every thread has copied out the round the set carried before. A thread
// whose share of the apply has no more batches marks its partitions of every later round
// ready (apply_done), so no round waits for it.
//
// Why no wait is forever: a thread waits for (a) a set to be free: for the other threads
// to copy out an earlier round, (b) MPI_Wait on an earlier round's requests, whose
// partitions are all ready (the set was free), or (c) its own partition to arrive: for
// the neighbour's thread t to reach that round. Each wait is for a strictly earlier round
// of some thread, or for the same thread on the neighbour at the same point of the same
// schedule, so waits cannot form a cycle.
//
// Partitions are the largest face message (all ranks agree on it), sent whole, so a
// sloped or clipped batch moves more bytes than p2p would.
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "../format.hpp"
#include "hybridfd/errors.hpp"
#include "hybridfd/halo_plan.hpp"
#include "hybridfd/transport.hpp"
#include "hybridfd/version.hpp"

namespace hybridfd {

std::string partitioned_unavailable() {
  const std::string library = mpi_library_version().substr(0, mpi_library_version().find('\n'));
#if MPI_VERSION >= 4
  int version = 0, subversion = 0;
  MPI_Get_version(&version, &subversion);
  if (version >= 4) return "";
  return detail::concat(
      "transport 'partitioned' needs MPI-4 partitioned communication (MPI_Psend_init), but the MPI "
      "library provides MPI ",
      version, ".", subversion, ": ", library);
#else
  return detail::concat(
      "transport 'partitioned' needs MPI-4 partitioned communication (MPI_Psend_init), but hybridfd "
      "was built with an MPI ",
      MPI_VERSION, ".", MPI_SUBVERSION, " header; the library is ", library);
#endif
}

#if MPI_VERSION >= 4
namespace {

// One direction of travel and one buffer set.
struct Channel {
  MPI_Request send = MPI_REQUEST_NULL, receive = MPI_REQUEST_NULL;
  std::vector<double> send_buffer, receive_buffer;
  std::int64_t round = 0;  // the round it carries, or carried last
  int copied = 0;          // threads done with that round (copied out, or out of batches)
};

class SharedChannels {
 public:
  // Collective over comm (agrees on the partition size).
  SharedChannels(MPI_Comm comm, int threads, const TransportLimits& limits)
      : threads_(threads),
        sets_(limits.max_in_flight),
        directions_(limits.direction_count()),
        next_round_(static_cast<std::size_t>(threads * directions_), 0),
        done_(static_cast<std::size_t>(threads), false) {
    for (int tag = 0; tag < halo_directions; ++tag)
      if (limits.directions & (std::uint32_t{1} << tag)) tags_.push_back(tag);
    MPI_Comm_rank(comm, &rank_);
    partition_ = std::max<std::int64_t>(limits.max_lanes, 1);
    MPI_Allreduce(MPI_IN_PLACE, &partition_, 1, MPI_INT64_T, MPI_MAX, comm);
    channels_.resize(static_cast<std::size_t>(directions_ * sets_));
    for (int direction = 0; direction < directions_; ++direction) {
      const int travel = tags_[static_cast<std::size_t>(direction)];
      const Offset way = tag_direction(travel);
      const int to = neighbour_towards(comm, travel);
      const int from = neighbour_towards(comm, direction_tag({-way[0], -way[1], -way[2]}));
      for (int set = 0; set < sets_; ++set) {
        Channel& channel = at(direction, set);
        channel.round = set - sets_;  // a finished round before the first
        channel.copied = threads;
        const int tag = travel * sets_ + set;
        const std::size_t lanes = static_cast<std::size_t>(threads) * static_cast<std::size_t>(partition_);
        if (from != MPI_PROC_NULL && from != rank_) {
          channel.receive_buffer.assign(lanes, 0.0);
          MPI_Precv_init(channel.receive_buffer.data(), threads, static_cast<MPI_Count>(partition_), MPI_DOUBLE, from,
                         tag, comm, MPI_INFO_NULL, &channel.receive);
        }
        if (to != MPI_PROC_NULL && to != rank_) {
          channel.send_buffer.assign(lanes, 0.0);
          MPI_Psend_init(channel.send_buffer.data(), threads, static_cast<MPI_Count>(partition_), MPI_DOUBLE, to, tag,
                         comm, MPI_INFO_NULL, &channel.send);
        }
      }
    }
  }

  ~SharedChannels() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    // The last rounds had every partition marked ready (apply_done): they complete.
    for (Channel& channel : channels_)
      for (MPI_Request* request : {&channel.send, &channel.receive})
        if (*request != MPI_REQUEST_NULL) {
          MPI_Wait(request, MPI_STATUS_IGNORE);
          MPI_Request_free(request);
        }
  }

  int rank() const { return rank_; }
  int sets() const { return sets_; }
  // Directions are numbered 0..directions()-1; tag(direction) is the way they travel.
  int directions() const { return directions_; }
  int tag(int direction) const { return tags_[static_cast<std::size_t>(direction)]; }

  // Thread `thread`'s next round in `direction`: waits until its channel carries it
  // (starting it if this thread is the first to need it).
  Channel& begin_round(int thread, int direction) {
    std::unique_lock lock(mutex_);
    const std::int64_t round = next_round_[index(thread, direction)]++;
    Channel& channel = at(direction, static_cast<int>(round % sets_));
    if (channel.round != round) {
      // The set is free once every thread is done with its previous round.
      changed_.wait(lock, [&] { return channel.round == round || channel.copied == threads_; });
      if (channel.round != round) start(channel, round);
    }
    return channel;
  }

  // Thread `thread` marks its data of `channel`'s round ready.
  void ready(Channel& channel, int thread, const double* data, std::int64_t lanes) {
    std::memcpy(channel.send_buffer.data() + thread * partition_, data,
                static_cast<std::size_t>(lanes) * sizeof(double));
    MPI_Pready(thread, channel.send);
  }

  // Whether partition `thread` of `channel`'s receive has arrived; if so, copied out.
  bool arrived(Channel& channel, int thread, double* data, std::int64_t lanes) {
    int flag = 0;
    MPI_Parrived(channel.receive, thread, &flag);
    if (flag)
      std::memcpy(data, channel.receive_buffer.data() + thread * partition_,
                  static_cast<std::size_t>(lanes) * sizeof(double));
    return flag != 0;
  }

  // Thread `thread` is done with `channel`'s round.
  void end_round(Channel& channel) {
    std::lock_guard lock(mutex_);
    ++channel.copied;
    changed_.notify_all();
  }

  // Thread `thread` has no more batches in this apply: it marks its partitions of the
  // rounds under way that it never joined, and later ones are marked when started. Once
  // every thread is done, all go on from the latest round in each direction.
  void apply_done(int thread) {
    std::lock_guard lock(mutex_);
    done_[static_cast<std::size_t>(thread)] = true;
    for (int direction = 0; direction < directions_; ++direction)
      for (int set = 0; set < sets_; ++set) {
        Channel& channel = at(direction, set);
        if (channel.round >= next_round_[index(thread, direction)]) stand_in(channel, thread);
      }
    if (std::count(done_.begin(), done_.end(), true) < threads_) return;
    for (int direction = 0; direction < directions_; ++direction) {
      std::int64_t latest = 0;
      for (int other = 0; other < threads_; ++other) latest = std::max(latest, next_round_[index(other, direction)]);
      for (int other = 0; other < threads_; ++other) next_round_[index(other, direction)] = latest;
    }
    std::fill(done_.begin(), done_.end(), false);
  }

 private:
  std::size_t index(int thread, int direction) const {
    return static_cast<std::size_t>(thread * directions_ + direction);
  }
  Channel& at(int direction, int set) { return channels_[static_cast<std::size_t>(direction * sets_ + set)]; }

  // Under the lock: completes the set's previous round (all its partitions are ready and
  // every thread has copied it out) and starts `round` on it.
  void start(Channel& channel, std::int64_t round) {
    for (MPI_Request* request : {&channel.send, &channel.receive})
      if (*request != MPI_REQUEST_NULL) {
        MPI_Wait(request, MPI_STATUS_IGNORE);
        MPI_Start(request);
      }
    channel.round = round;
    channel.copied = 0;
    for (int thread = 0; thread < threads_; ++thread)
      if (done_[static_cast<std::size_t>(thread)]) stand_in(channel, thread);
    changed_.notify_all();
  }

  // Under the lock: a thread out of batches takes part in the channel's round with an
  // empty partition.
  void stand_in(Channel& channel, int thread) {
    if (channel.send != MPI_REQUEST_NULL) MPI_Pready(thread, channel.send);
    ++channel.copied;
  }

  int threads_;
  int sets_;
  int directions_;
  std::vector<int> tags_;  // per direction: its tag
  int rank_ = 0;
  std::int64_t partition_ = 1;  // lanes per partition, the same on every rank
  std::vector<Channel> channels_;
  std::vector<std::int64_t> next_round_;  // [thread][direction]
  std::vector<bool> done_;                // per thread: out of batches in this apply
  std::mutex mutex_;
  std::condition_variable changed_;
};

// Thread `thread`'s transport: its partition of every channel.
class PartitionedPart final : public Transport {
 public:
  PartitionedPart(std::shared_ptr<SharedChannels> shared, int thread, const TransportLimits& limits)
      : shared_(std::move(shared)), thread_(thread), tickets_(static_cast<std::size_t>(limits.max_in_flight)) {
    for (Ticket& ticket : tickets_) ticket.rounds.reserve(static_cast<std::size_t>(shared_->directions()));
  }

  int start(std::span<const FaceMessage> messages) override {
    const int index = next_;
    next_ = (next_ + 1) % static_cast<int>(tickets_.size());
    Ticket& ticket = tickets_[static_cast<std::size_t>(index)];
    ticket.rounds.clear();
    ticket.in_flight = true;
    const int rank = shared_->rank();
    auto other = [&](const FaceMessage& message) {
      return message.neighbour != MPI_PROC_NULL && message.neighbour != rank;
    };
    for (int direction = 0; direction < shared_->directions(); ++direction) {
      const int travel = shared_->tag(direction);
      const FaceMessage *sending = nullptr, *receiving = nullptr;
      for (const FaceMessage& message : messages)
        if (other(message)) {
          if (message.send_tag == travel) sending = &message;
          if (message.receive_tag == travel) receiving = &message;
        }
      if (!sending && !receiving) continue;
      Channel& channel = shared_->begin_round(thread_, direction);
      if (sending) shared_->ready(channel, thread_, sending->send, sending->lanes);
      ticket.rounds.push_back({&channel, receiving ? receiving->receive : nullptr, receiving ? receiving->lanes : 0});
    }
    deliver_to_self(messages, rank);
    return index;
  }

  void finish(int index) override {
    Ticket& ticket = tickets_[static_cast<std::size_t>(index)];
    if (!ticket.in_flight) return;
    // Waits for the neighbour's thread of the same number to reach this round.
    for (Round& round : ticket.rounds) {
      while (round.receive && !shared_->arrived(*round.channel, thread_, round.receive, round.lanes)) sched_yield();
      shared_->end_round(*round.channel);
    }
    ticket.in_flight = false;
  }

  void progress(int index) override {
    Ticket& ticket = tickets_[static_cast<std::size_t>(index)];
    if (!ticket.in_flight) return;
    for (Round& round : ticket.rounds)
      if (round.receive && shared_->arrived(*round.channel, thread_, round.receive, round.lanes))
        round.receive = nullptr;  // copied out: finish has only the round to end
  }

  void apply_done() override { shared_->apply_done(thread_); }

 private:
  struct Round {
    Channel* channel;
    double* receive;  // where the partition goes; null if nothing is (still) to receive
    std::int64_t lanes;
  };
  struct Ticket {
    std::vector<Round> rounds;
    bool in_flight = false;
  };

  std::shared_ptr<SharedChannels> shared_;
  int thread_;
  int next_ = 0;
  std::vector<Ticket> tickets_;
};

}  // namespace

std::vector<std::unique_ptr<Transport>> make_partitioned_thread_transports(std::span<const MPI_Comm> comms,
                                                                           const TransportLimits& limits) {
  if (const std::string why = partitioned_unavailable(); !why.empty()) throw ValueError(why);
  const int threads = static_cast<int>(comms.size());
  // Every thread's partition travels in one request, on thread 0's communicator.
  auto shared = std::make_shared<SharedChannels>(comms[0], threads, limits);
  std::vector<std::unique_ptr<Transport>> parts;
  for (int thread = 0; thread < threads; ++thread)
    parts.push_back(std::make_unique<PartitionedPart>(shared, thread, limits));
  return parts;
}

#else

std::vector<std::unique_ptr<Transport>> make_partitioned_thread_transports(std::span<const MPI_Comm>,
                                                                           const TransportLimits&) {
  throw ValueError(partitioned_unavailable());
}

#endif

std::unique_ptr<Transport> make_partitioned_transport(MPI_Comm comm, const TransportLimits& limits) {
  auto parts = make_partitioned_thread_transports({&comm, 1}, limits);
  return std::move(parts.front());
}

}  // namespace hybridfd
