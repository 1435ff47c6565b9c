// p2p: non-blocking two-sided messages (MPI_Irecv/MPI_Isend), all receives posted before
// any send so that an eager message always finds its buffer (GPAW's bc.c does the same).
// Two batches to the same neighbour share tags; MPI's ordering rule (messages between a
// pair on one tag match receives in posting order) keeps them apart.
#include <vector>

#include "hybridfd/transport.hpp"

namespace hybridfd {
namespace {

class PointToPoint final : public Transport {
 public:
  PointToPoint(MPI_Comm comm, const TransportLimits& limits) : comm_(comm), slots_(limits.max_in_flight) {
    MPI_Comm_rank(comm, &rank_);
    for (auto& requests : slots_) requests.reserve(2 * static_cast<std::size_t>(limits.max_messages));
  }

  int start(std::span<const FaceMessage> messages) override {
    const int ticket = next_;
    next_ = (next_ + 1) % static_cast<int>(slots_.size());
    auto& requests = slots_[ticket];
    requests.clear();  // keeps its capacity: no allocation in steady state
    for (const FaceMessage& message : messages)
      if (message.neighbour != MPI_PROC_NULL && message.neighbour != rank_)
        MPI_Irecv(message.receive, static_cast<int>(message.lanes), MPI_DOUBLE, message.neighbour, message.receive_tag,
                  comm_, &requests.emplace_back());
    for (const FaceMessage& message : messages)
      if (message.neighbour != MPI_PROC_NULL && message.neighbour != rank_)
        MPI_Isend(message.send, static_cast<int>(message.lanes), MPI_DOUBLE, message.neighbour, message.send_tag, comm_,
                  &requests.emplace_back());
    deliver_to_self(messages, rank_);
    return ticket;
  }

  void finish(int ticket) override {
    auto& requests = slots_[ticket];
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  }

  void progress(int ticket) override {
    auto& requests = slots_[ticket];
    int done = 0;
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int next_ = 0;
  std::vector<std::vector<MPI_Request>> slots_;
};

}  // namespace

std::unique_ptr<Transport> make_p2p_transport(MPI_Comm comm, const TransportLimits& limits) {
  return std::make_unique<PointToPoint>(comm, limits);
}

}  // namespace hybridfd
