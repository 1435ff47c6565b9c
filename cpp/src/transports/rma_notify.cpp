// rma-notify: the MiniMD slides' Hybrid-Advanced design in portable MPI-3 RMA. Each
// rank's receive buffers are cyclic rings in a RingWindow, one ring per direction of
// travel (the face tags 0..5), so each ring has one origin: the neighbour on that side.
// A face is sent by reserving room with an atomic on the neighbour's write index,
// MPI_Put, flush, and an atomic on its arrival counter; the neighbour polls its own
// memory. No barrier, no fence, no receive posted, nothing matched.
//
// Why the origin never waits for room (so start() cannot deadlock): a ring holds
// 2 * max_in_flight of the largest messages. Let A send its k-th message of direction t
// to B. A has at most m = max_in_flight batches in flight on that ring, finished in the
// order started, so A has finished the batch of its (k-m)-th message; finishing it needed
// B's reverse-direction message of that batch, so B had started its (k-m)-th batch on
// this face pair, and so (at most m in flight) B had finished, that is received, its
// (k-2m)-th message from A. At most 2m messages, the k-th included, are unreceived.
//
// Particles: the same six rings (one per direction of travel, so one origin each), each
// exchange a send() of its messages and a receive() of the neighbours'. Exchanges are
// blocking and pair each message with one coming back (a neighbour along an axis sends
// both ways in every exchange along it), so the argument above with m = 1 holds: at most
// two messages per ring are unreceived, and rings of twice the largest message never
// make an origin wait. Sizes vary: an exchange of unknown sizes agrees on the largest
// message with one MPI_Allreduce and, if the rings are too small, every rank replaces
// its RingWindow (collective; all earlier messages are received by then, as every rank
// finished its previous exchange before entering the allreduce). A position refresh
// (sizes known, none larger) needs no collective at all: reserve, put, notify, poll.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "../format.hpp"
#include "hybridfd/particle_exchange.hpp"
#include "hybridfd/ring_window.hpp"
#include "hybridfd/transport.hpp"

namespace hybridfd {
namespace {

constexpr int directions = 6;  // face tags: 2 * axis + (1 if travelling up)

class RmaNotify final : public Transport {
 public:
  RmaNotify(MPI_Comm comm, const TransportLimits& limits)
      : rings_(comm, directions, 2 * limits.max_in_flight * 8 * (1 + std::max<std::int64_t>(limits.max_lanes, 1))),
        outgoing_(static_cast<std::size_t>(limits.max_in_flight)),
        incoming_(static_cast<std::size_t>(limits.max_in_flight)),
        in_flight_(static_cast<std::size_t>(limits.max_in_flight), false) {
    MPI_Comm_rank(comm, &rank_);
    for (auto& batch : outgoing_) batch.reserve(static_cast<std::size_t>(limits.max_messages));
    for (auto& batch : incoming_) batch.reserve(static_cast<std::size_t>(limits.max_messages));
  }

  int start(std::span<const FaceMessage> messages) override {
    const int ticket = next_;
    next_ = (next_ + 1) % static_cast<int>(incoming_.size());
    auto& outgoing = outgoing_[static_cast<std::size_t>(ticket)];
    auto& incoming = incoming_[static_cast<std::size_t>(ticket)];
    outgoing.clear(), incoming.clear();  // within the reserved capacity
    for (const FaceMessage& message : messages) {
      if (message.neighbour == MPI_PROC_NULL || message.neighbour == rank_) continue;
      const std::int64_t bytes = message.lanes * std::int64_t{sizeof(double)};
      outgoing.push_back({message.neighbour, message.send_tag, message.send, bytes});
      incoming.push_back({message.receive_tag, message.receive, bytes});
    }
    rings_.send(outgoing);
    in_flight_[static_cast<std::size_t>(ticket)] = true;
    deliver_to_self(messages, rank_);
    return ticket;
  }

  void finish(int ticket) override {
    // A model whose thread 0 completes batches early (funneled-overlap) may finish one
    // twice: the second time is a no-op, as with MPI requests.
    if (!in_flight_[static_cast<std::size_t>(ticket)]) return;
    // A ring delivers in the order sent, so batches must finish in the order started
    // (every schedule does).
    if (ticket != oldest_)
      throw std::logic_error(detail::concat("rma-notify: batch ", ticket, " finished out of order"));
    auto& incoming = incoming_[static_cast<std::size_t>(ticket)];
    rings_.receive(incoming);
    for (const IncomingMessage& message : incoming)
      if (message.bytes != message.room)
        throw std::logic_error(detail::concat("rma-notify: a face message of ", message.bytes, " bytes in ring ",
                                              message.ring, " where ", message.room, " were expected"));
    in_flight_[static_cast<std::size_t>(ticket)] = false;
    oldest_ = (oldest_ + 1) % static_cast<int>(incoming_.size());
  }

  // Copies out the faces that have arrived, if this is the oldest batch (a ring delivers
  // in order). The data move without the target's help: nothing else to do.
  void progress(int ticket) override {
    if (in_flight_[static_cast<std::size_t>(ticket)] && ticket == oldest_)
      rings_.test(incoming_[static_cast<std::size_t>(ticket)]);
  }

 private:
  RingWindow rings_;
  int rank_ = 0;
  int next_ = 0;
  int oldest_ = 0;                                      // the batch to finish next
  std::vector<std::vector<OutgoingMessage>> outgoing_;  // per ticket
  std::vector<std::vector<IncomingMessage>> incoming_;  // per ticket
  std::vector<bool> in_flight_;                         // per ticket: started, not finished
};

class RmaNotifyParticles final : public ParticleExchange {
 public:
  explicit RmaNotifyParticles(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm, &rank_);
    make_rings(1024);
  }

  void exchange(std::span<const ParticleSend> sends, std::span<ParticleReceive> receives, bool sizes_known) override {
    const auto remote = [this](int neighbour) { return neighbour != MPI_PROC_NULL && neighbour != rank_; };
    const std::int64_t largest = largest_remote_send(sends, rank_, comm_, !sizes_known);
    if (!sizes_known) {
      if (largest > largest_) {
        rings_.reset();  // collective MPI_Win_free before the new window
        make_rings(largest + largest / 2);
      }
    } else if (largest > largest_) {
      throw std::logic_error(detail::concat("rma-notify: a particle message of ", largest,
                                            " values exceeds the rings agreed at the last exchange of unknown sizes"));
    }
    outgoing_.clear(), incoming_.clear();  // keep their capacity
    for (const ParticleSend& send : sends)
      if (remote(send.neighbour))
        outgoing_.push_back({send.neighbour, send.direction, send.data, send.count * std::int64_t{sizeof(double)}});
    rings_->send(outgoing_);
    deliver_particles_to_self(sends, receives, rank_);
    for (const ParticleReceive& receive : receives)
      if (remote(receive.neighbour))
        incoming_.push_back(
            {receive.direction, receive.buffer->reserve(largest_), largest_ * std::int64_t{sizeof(double)}});
    rings_->receive(incoming_);
    std::size_t next = 0;
    for (ParticleReceive& receive : receives)
      if (remote(receive.neighbour)) receive.buffer->count = incoming_[next++].bytes / std::int64_t{sizeof(double)};
  }

 private:
  void make_rings(std::int64_t largest) {
    largest_ = largest;
    // Two messages and their length words per ring (see above).
    rings_ = std::make_unique<RingWindow>(comm_, directions, 2 * (largest + 1) * std::int64_t{sizeof(double)});
  }

  MPI_Comm comm_;
  int rank_ = 0;
  std::int64_t largest_ = 0;  // float64 values of the largest message the rings take
  std::unique_ptr<RingWindow> rings_;
  std::vector<OutgoingMessage> outgoing_;
  std::vector<IncomingMessage> incoming_;
};

}  // namespace

std::unique_ptr<ParticleExchange> make_rma_notify_particle_exchange(MPI_Comm comm) {
  return std::make_unique<RmaNotifyParticles>(comm);
}

std::unique_ptr<Transport> make_rma_notify_transport(MPI_Comm comm, const TransportLimits& limits) {
  return std::make_unique<RmaNotify>(comm, limits);
}

}  // namespace hybridfd
