// persistent: MPI_Recv_init/MPI_Send_init created once per distinct batch of messages
// (buffers and sizes) and restarted with MPI_Startall on every apply, so the library can
// set up each message path once. A schedule reuses a few buffer sets and batch sizes, so
// after the first apply with a given number of grids nothing is created or allocated.
#include <algorithm>
#include <deque>
#include <vector>

#include "hybridfd/transport.hpp"

namespace hybridfd {
namespace {

bool same(const FaceMessage& a, const FaceMessage& b) {
  return a.neighbour == b.neighbour && a.send == b.send && a.receive == b.receive && a.lanes == b.lanes &&
         a.send_tag == b.send_tag && a.receive_tag == b.receive_tag;
}

struct RequestSet {
  std::vector<FaceMessage> messages;  // what the requests were made for
  std::vector<MPI_Request> requests;
};

class Persistent final : public Transport {
 public:
  Persistent(MPI_Comm comm, const TransportLimits& limits)
      : comm_(comm), max_messages_(limits.max_messages), in_flight_(limits.max_in_flight, nullptr) {
    MPI_Comm_rank(comm, &rank_);
  }

  ~Persistent() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (auto& set : sets_)
      for (auto& request : set.requests) MPI_Request_free(&request);
  }

  int start(std::span<const FaceMessage> messages) override {
    RequestSet& set = find_or_create(messages);
    const int ticket = next_;
    next_ = (next_ + 1) % static_cast<int>(in_flight_.size());
    in_flight_[ticket] = &set;
    MPI_Startall(static_cast<int>(set.requests.size()), set.requests.data());
    deliver_to_self(messages, rank_);
    return ticket;
  }

  void finish(int ticket) override {
    RequestSet& set = *in_flight_[ticket];
    MPI_Waitall(static_cast<int>(set.requests.size()), set.requests.data(), MPI_STATUSES_IGNORE);
  }

  void progress(int ticket) override {
    RequestSet& set = *in_flight_[ticket];
    int done = 0;
    MPI_Testall(static_cast<int>(set.requests.size()), set.requests.data(), &done, MPI_STATUSES_IGNORE);
  }

 private:
  RequestSet& find_or_create(std::span<const FaceMessage> messages) {
    for (RequestSet& set : sets_)
      if (set.messages.size() == messages.size() &&
          std::equal(messages.begin(), messages.end(), set.messages.begin(), same))
        return set;
    RequestSet& set = sets_.emplace_back();  // a deque: sets in flight keep their address
    set.messages.assign(messages.begin(), messages.end());
    set.requests.reserve(2 * static_cast<std::size_t>(max_messages_));
    for (const FaceMessage& message : messages)
      if (message.neighbour != MPI_PROC_NULL && message.neighbour != rank_)
        MPI_Recv_init(message.receive, static_cast<int>(message.lanes), MPI_DOUBLE, message.neighbour,
                      message.receive_tag, comm_, &set.requests.emplace_back());
    for (const FaceMessage& message : messages)
      if (message.neighbour != MPI_PROC_NULL && message.neighbour != rank_)
        MPI_Send_init(message.send, static_cast<int>(message.lanes), MPI_DOUBLE, message.neighbour, message.send_tag,
                      comm_, &set.requests.emplace_back());
    return set;
  }

  MPI_Comm comm_;
  int rank_ = 0;
  int max_messages_;
  int next_ = 0;
  std::deque<RequestSet> sets_;
  std::vector<RequestSet*> in_flight_;
};

}  // namespace

std::unique_ptr<Transport> make_persistent_transport(MPI_Comm comm, const TransportLimits& limits) {
  return std::make_unique<Persistent>(comm, limits);
}

}  // namespace hybridfd
