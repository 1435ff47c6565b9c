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
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "../format.hpp"
#include "hybridfd/ring_window.hpp"
#include "hybridfd/transport.hpp"

namespace hybridfd {
namespace {

class RmaNotify final : public Transport {
 public:
  RmaNotify(MPI_Comm comm, const TransportLimits& limits)
      : limits_(limits),
        rings_(comm, limits.direction_count(),
               2 * limits.max_in_flight * 8 * (1 + std::max<std::int64_t>(limits.max_lanes, 1))),
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
      outgoing.push_back({message.neighbour, limits_.direction_index(message.send_tag), message.send, bytes});
      incoming.push_back({limits_.direction_index(message.receive_tag), message.receive, bytes});
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
  TransportLimits limits_;
  RingWindow rings_;
  int rank_ = 0;
  int next_ = 0;
  int oldest_ = 0;                                      // the batch to finish next
  std::vector<std::vector<OutgoingMessage>> outgoing_;  // per ticket
  std::vector<std::vector<IncomingMessage>> incoming_;  // per ticket
  std::vector<bool> in_flight_;                         // per ticket: started, not finished
};

}  // namespace

std::unique_ptr<Transport> make_rma_notify_transport(MPI_Comm comm, const TransportLimits& limits) {
  return std::make_unique<RmaNotify>(comm, limits);
}

}  // namespace hybridfd
