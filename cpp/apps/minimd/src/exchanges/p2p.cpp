// p2p for particles: non-blocking two-sided messages, as the grid transport of the same
// name. Messages of unknown size are matched with MPI_Mprobe and sized with
// MPI_Get_count before MPI_Mrecv, so no separate size message is sent; known sizes
// (position refresh) post their MPI_Irecvs first.
#include <mpi.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "hybridfd/minimd/particle_exchange.hpp"

namespace hybridfd::minimd {
namespace {

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

}  // namespace hybridfd::minimd
