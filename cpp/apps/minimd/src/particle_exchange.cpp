// Particle exchange registry: one line per exchange, each named after the grid transport
// of the same design (the papers compare the two designs on both kinds of halo).
#include "hybridfd/minimd/particle_exchange.hpp"

#include <algorithm>
#include <cstring>

#include "format.hpp"
#include "hybridfd/transport.hpp"
#include "registry.hpp"

namespace hybridfd::minimd {

std::unique_ptr<ParticleExchange> make_p2p_particle_exchange(MPI_Comm comm);
std::unique_ptr<ParticleExchange> make_rma_fence_particle_exchange(MPI_Comm comm);
std::unique_ptr<ParticleExchange> make_rma_notify_particle_exchange(MPI_Comm comm);

namespace {

using Factory = std::unique_ptr<ParticleExchange> (*)(MPI_Comm);

const detail::Registry<Factory>& registry() {
  static const detail::Registry<Factory> exchanges{"particle transport",
                                                   {
                                                       {"p2p", make_p2p_particle_exchange},
                                                       {"rma-fence", make_rma_fence_particle_exchange},
                                                       {"rma-notify", make_rma_notify_particle_exchange},
                                                   }};
  return exchanges;
}

bool listed(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

std::vector<std::string> particle_transport_names() { return registry().names(); }

void check_particle_transport(std::string_view transport) {
  const std::vector<std::string> names = particle_transport_names();
  if (listed(names, transport)) return;
  if (listed(transport_names(), transport))
    throw ValueError(detail::concat("transport '", transport,
                                    "' moves grid faces only, not particles; particle transports: ", joined(names)));
  throw ValueError(detail::concat("unknown transport '", transport, "'; particle transports: ", joined(names)));
}

std::unique_ptr<ParticleExchange> make_particle_exchange(std::string_view transport, MPI_Comm comm) {
  check_particle_transport(transport);
  return registry().at(transport)(comm);
}

std::int64_t largest_remote_send(std::span<const ParticleSend> sends, int self, MPI_Comm comm, bool agree) {
  std::int64_t largest = 0;
  for (const ParticleSend& send : sends)
    if (send.neighbour != MPI_PROC_NULL && send.neighbour != self) largest = std::max(largest, send.count);
  if (agree) MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_INT64_T, MPI_MAX, comm);
  return largest;
}

void deliver_particles_to_self(std::span<const ParticleSend> sends, std::span<ParticleReceive> receives, int self) {
  for (const ParticleSend& send : sends) {
    if (send.neighbour != self) continue;
    for (ParticleReceive& receive : receives)
      if (receive.neighbour == self && receive.direction == send.direction) {
        double* into = receive.buffer->reserve(send.count);
        std::memcpy(into, send.data, static_cast<std::size_t>(send.count) * sizeof(double));
        receive.buffer->count = send.count;
      }
  }
}

}  // namespace hybridfd::minimd
