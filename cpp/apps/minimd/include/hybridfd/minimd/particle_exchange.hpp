// ParticleExchange: messages of varying size between neighbouring ranks, the irregular
// halos of the MiniMD slides (atoms leaving a rank's region, ghost "border" atoms, their
// positions every step). Made by the app's registry (src/particle_exchange.cpp) under
// the names of the grid transports of the same design: p2p, rma-fence and rma-notify,
// each in its file in src/exchanges/.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hybridfd::minimd {

// A receive buffer that grows and never shrinks, so that a steady state allocates
// nothing: `count` values are valid, `storage` holds at least that many.
struct ParticleBuffer {
  std::vector<double> storage;
  std::int64_t count = 0;
  // Makes room for `values`, keeping the contents (the pointer may change).
  double* reserve(std::int64_t values) {
    if (static_cast<std::int64_t>(storage.size()) < values)
      storage.resize(static_cast<std::size_t>(values + values / 2));
    return storage.data();
  }
  const double* data() const { return storage.data(); }
};

// One message of an exchange. `direction` = 2 * axis + (1 if travelling up): the
// receiver of a message sent up names the same direction in its matching receive (from
// its lower neighbour). A message to this rank itself (a periodic axis of one rank) is a
// copy, never an MPI call.
struct ParticleSend {
  int neighbour = MPI_PROC_NULL;
  int direction = 0;
  const double* data = nullptr;
  std::int64_t count = 0;  // float64 values, any number (0 too)
};

struct ParticleReceive {
  int neighbour = MPI_PROC_NULL;
  int direction = 0;
  ParticleBuffer* buffer = nullptr;  // resized to what arrives; `count` set
};

class ParticleExchange {
 public:
  virtual ~ParticleExchange() = default;
  // Collective over the ranks named as neighbours: returns when every receive has
  // arrived and every send buffer may be reused. Every listed neighbour sends exactly
  // one message per direction it is listed under, and the exchanges of all ranks come
  // in the same sequence.
  //
  // sizes_known: every receive buffer's `count` already says what arrives (a position
  // refresh over the lists of the last border exchange), and no message is larger than
  // the largest of the last exchange with sizes_known = false. Transports may then skip
  // agreeing on sizes.
  virtual void exchange(std::span<const ParticleSend> sends, std::span<ParticleReceive> receives, bool sizes_known) = 0;
};

// Collective over comm (the one-sided exchanges make an MPI window). Throws ValueError
// naming the transport and listing those that move particles if it is unknown or moves
// only grid faces.
std::unique_ptr<ParticleExchange> make_particle_exchange(std::string_view transport, MPI_Comm comm);
// Local: the same ValueError as make_particle_exchange, before anything collective.
void check_particle_transport(std::string_view transport);
std::vector<std::string> particle_transport_names();

// The largest send to another rank, in values; with agree, the largest over all ranks of
// comm (collective: an allreduce), which one-sided exchanges size their windows by.
std::int64_t largest_remote_send(std::span<const ParticleSend> sends, int self, MPI_Comm comm, bool agree);

// Copies the self-addressed sends into the receives of the same direction (shared by
// all particle transports).
void deliver_particles_to_self(std::span<const ParticleSend> sends, std::span<ParticleReceive> receives, int self);

}  // namespace hybridfd::minimd
