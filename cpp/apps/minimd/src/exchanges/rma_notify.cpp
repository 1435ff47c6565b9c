// rma-notify for particles: the MiniMD slides' Hybrid-Advanced design in portable MPI-3
// RMA on the core's RingWindow, as the grid transport of the same name: six rings, one
// per direction of travel (so one origin each); an exchange is a send() of this rank's
// messages and a receive() of the neighbours'.
//
// Why an origin never waits for room: exchanges are blocking and pair each message with
// one coming back (a neighbour along an axis sends both ways in every exchange along
// it), so the grid transport's argument (cpp/src/transports/rma_notify.cpp) holds with
// one batch in flight: at most two messages per ring are unreceived, and rings of twice
// the largest message never make an origin wait. Sizes vary: an exchange of unknown sizes
// agrees on the largest message with one MPI_Allreduce and, if the rings are too small,
// every rank replaces its RingWindow (collective; all earlier messages are received by
// then, as every rank finished its previous exchange before entering the allreduce). A
// position refresh (sizes known, none larger) needs no collective at all: reserve, put,
// notify, poll.
#include <mpi.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "format.hpp"
#include "hybridfd/minimd/particle_exchange.hpp"
#include "hybridfd/ring_window.hpp"

namespace hybridfd::minimd {
namespace {

constexpr int directions = 6;  // face tags: 2 * axis + (1 if travelling up)

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

}  // namespace hybridfd::minimd
