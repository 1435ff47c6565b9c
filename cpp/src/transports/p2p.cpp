// p2p: non-blocking two-sided messages (MPI_Irecv/MPI_Isend), all receives posted
// before any send so that an eager message always finds its buffer (GPAW's bc.c does
// the same).
#include <vector>

#include "hybridfd/transport.hpp"

namespace hybridfd {
namespace {

class PointToPoint final : public Transport {
 public:
  PointToPoint(MPI_Comm comm, int max_messages) : comm_(comm) {
    MPI_Comm_rank(comm, &rank_);
    requests_.reserve(2 * static_cast<std::size_t>(max_messages));
  }

  void start(std::span<const FaceMessage> messages) override {
    for (const FaceMessage& message : messages)
      if (message.neighbour != MPI_PROC_NULL && message.neighbour != rank_)
        MPI_Irecv(message.receive, static_cast<int>(message.lanes), MPI_DOUBLE, message.neighbour, message.receive_tag,
                  comm_, &requests_.emplace_back());
    for (const FaceMessage& message : messages)
      if (message.neighbour != MPI_PROC_NULL && message.neighbour != rank_)
        MPI_Isend(message.send, static_cast<int>(message.lanes), MPI_DOUBLE, message.neighbour, message.send_tag, comm_,
                  &requests_.emplace_back());
    deliver_to_self(messages, rank_);
  }

  void finish() override {
    MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();  // keeps its capacity: no allocation in steady state
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  std::vector<MPI_Request> requests_;
};

}  // namespace

std::unique_ptr<Transport> make_p2p_transport(MPI_Comm comm, int max_messages) {
  return std::make_unique<PointToPoint>(comm, max_messages);
}

}  // namespace hybridfd
