// rma-fence for particles: the MiniMD slides' Hybrid-Barrier design in portable MPI-3
// RMA, as the grid transport of the same name (cpp/src/transports/rma_fence.cpp). One
// slot per direction of travel, each a count word and room for the largest message; an
// exchange is a fence, the puts (count, then data), a fence, and copies out of this
// rank's slots (the slides' "barrier before and after Put"). Sizes vary, so an exchange
// of unknown sizes first agrees on the largest message with one MPI_Allreduce, and every
// rank grows its window (collectively, MPI_Win_free and MPI_Win_allocate) when that
// exceeds the slots; a position refresh (sizes known, none larger than the last border
// exchange's) skips the allreduce.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "hybridfd/minimd/particle_exchange.hpp"

namespace hybridfd::minimd {
namespace {

constexpr int directions = 6;  // face tags: 2 * axis + (1 if travelling up)

class RmaFenceParticles final : public ParticleExchange {
 public:
  explicit RmaFenceParticles(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm, &rank_);
    allocate(1024);
  }

  ~RmaFenceParticles() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Win_free(&window_);
  }

  void exchange(std::span<const ParticleSend> sends, std::span<ParticleReceive> receives, bool sizes_known) override {
    const auto remote = [this](int neighbour) { return neighbour != MPI_PROC_NULL && neighbour != rank_; };
    const std::int64_t largest = largest_remote_send(sends, rank_, comm_, !sizes_known);
    if (!sizes_known) {
      if (largest > slot_values_) {
        MPI_Win_free(&window_);
        allocate(largest + largest / 2);
      }
    } else if (largest > slot_values_) {
      throw std::logic_error("rma-fence: a particle message of " + std::to_string(largest) +
                             " values exceeds the slots agreed at the last exchange of unknown sizes");
    }
    MPI_Win_fence(0, window_);
    for (const ParticleSend& send : sends) {
      if (!remote(send.neighbour)) continue;
      const auto direction = static_cast<std::size_t>(send.direction);
      counts_[direction] = static_cast<double>(send.count);
      MPI_Put(&counts_[direction], 1, MPI_DOUBLE, send.neighbour, slot(send.direction), 1, MPI_DOUBLE, window_);
      MPI_Put(send.data, static_cast<int>(send.count), MPI_DOUBLE, send.neighbour, slot(send.direction) + 1,
              static_cast<int>(send.count), MPI_DOUBLE, window_);
    }
    deliver_particles_to_self(sends, receives, rank_);
    MPI_Win_fence(0, window_);
    for (ParticleReceive& receive : receives) {
      if (!remote(receive.neighbour)) continue;
      const double* from = slots_ + slot(receive.direction);
      const auto count = static_cast<std::int64_t>(from[0]);
      std::memcpy(receive.buffer->reserve(count), from + 1, static_cast<std::size_t>(count) * sizeof(double));
      receive.buffer->count = count;
    }
  }

 private:
  void allocate(std::int64_t slot_values) {
    slot_values_ = slot_values;
    const MPI_Aint bytes = static_cast<MPI_Aint>(directions) * (slot_values_ + 1) * sizeof(double);
    MPI_Win_allocate(bytes, sizeof(double), MPI_INFO_NULL, comm_, &slots_, &window_);
  }
  MPI_Aint slot(int direction) const { return static_cast<MPI_Aint>(direction) * (slot_values_ + 1); }

  MPI_Comm comm_;
  int rank_ = 0;
  std::int64_t slot_values_ = 0;  // the same on every rank
  double* slots_ = nullptr;
  MPI_Win window_ = MPI_WIN_NULL;
  std::array<double, directions> counts_{};  // origin buffers of the count puts
};

}  // namespace

std::unique_ptr<ParticleExchange> make_rma_fence_particle_exchange(MPI_Comm comm) {
  return std::make_unique<RmaFenceParticles>(comm);
}

}  // namespace hybridfd::minimd
