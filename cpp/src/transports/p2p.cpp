// p2p: non-blocking two-sided messages (MPI_Irecv/MPI_Isend), all receives posted before
// any send so that an eager message always finds its buffer (GPAW's bc.c does the same).
// Two batches to the same neighbour share tags; MPI's ordering rule (messages between a
// pair on one tag match receives in posting order) keeps them apart.
//
// Particles (MiniMD's own exchange): messages of unknown size are matched with
// MPI_Mprobe and sized with MPI_Get_count before MPI_Mrecv, so no separate size message
// is sent; known sizes (position refresh) post their MPI_Irecvs first.
#include <stdexcept>
#include <string>
#include <vector>

#include "hybridfd/particle_exchange.hpp"
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

class PointToPointParticles final : public ParticleExchange {
 public:
  explicit PointToPointParticles(MPI_Comm comm) : comm_(comm) { MPI_Comm_rank(comm, &rank_); }

  void exchange(std::span<const ParticleSend> sends, std::span<ParticleReceive> receives, bool sizes_known) override {
    requests_.clear();  // keeps its capacity
    const auto remote = [this](int neighbour) { return neighbour != MPI_PROC_NULL && neighbour != rank_; };
    if (sizes_known)
      for (ParticleReceive& receive : receives)
        if (remote(receive.neighbour))
          MPI_Irecv(receive.buffer->reserve(receive.buffer->count), count(receive.buffer->count), MPI_DOUBLE,
                    receive.neighbour, receive.direction, comm_, &requests_.emplace_back());
    for (const ParticleSend& send : sends)
      if (remote(send.neighbour))
        MPI_Isend(send.data, count(send.count), MPI_DOUBLE, send.neighbour, send.direction, comm_,
                  &requests_.emplace_back());
    deliver_particles_to_self(sends, receives, rank_);
    if (!sizes_known)
      for (ParticleReceive& receive : receives) {
        if (!remote(receive.neighbour)) continue;
        MPI_Message message;
        MPI_Status status;
        MPI_Mprobe(receive.neighbour, receive.direction, comm_, &message, &status);
        int values = 0;
        MPI_Get_count(&status, MPI_DOUBLE, &values);
        MPI_Mrecv(receive.buffer->reserve(values), values, MPI_DOUBLE, &message, MPI_STATUS_IGNORE);
        receive.buffer->count = values;
      }
    MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  }

 private:
  static int count(std::int64_t values) {
    if (values > std::int64_t{1} << 30)
      throw std::length_error("p2p: a particle message of " + std::to_string(values) + " values is too large");
    return static_cast<int>(values);
  }

  MPI_Comm comm_;
  int rank_ = 0;
  std::vector<MPI_Request> requests_;
};

}  // namespace

std::unique_ptr<ParticleExchange> make_p2p_particle_exchange(MPI_Comm comm) {
  return std::make_unique<PointToPointParticles>(comm);
}

std::unique_ptr<Transport> make_p2p_transport(MPI_Comm comm, const TransportLimits& limits) {
  return std::make_unique<PointToPoint>(comm, limits);
}

}  // namespace hybridfd
