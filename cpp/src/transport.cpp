// Transport registry: one line per transport, with the schedules and models it supports
// (none listed: all) and, for one that needs more of MPI than the others, a check that
// this MPI library has it.
#include "hybridfd/transport.hpp"

#include <algorithm>
#include <cstring>

#include "format.hpp"
#include "hybridfd/model.hpp"
#include "hybridfd/particle_exchange.hpp"
#include "hybridfd/schedule.hpp"
#include "registry.hpp"

namespace hybridfd {

std::unique_ptr<Transport> make_p2p_transport(MPI_Comm comm, const TransportLimits& limits);
std::unique_ptr<Transport> make_persistent_transport(MPI_Comm comm, const TransportLimits& limits);
std::unique_ptr<Transport> make_rma_fence_transport(MPI_Comm comm, const TransportLimits& limits);
std::unique_ptr<Transport> make_rma_notify_transport(MPI_Comm comm, const TransportLimits& limits);
std::unique_ptr<Transport> make_neighbor_transport(MPI_Comm comm, const TransportLimits& limits);
std::unique_ptr<Transport> make_partitioned_transport(MPI_Comm comm, const TransportLimits& limits);
std::vector<std::unique_ptr<Transport>> make_partitioned_thread_transports(std::span<const MPI_Comm> comms,
                                                                           const TransportLimits& limits);
std::string partitioned_unavailable();
std::unique_ptr<ParticleExchange> make_p2p_particle_exchange(MPI_Comm comm);
std::unique_ptr<ParticleExchange> make_rma_fence_particle_exchange(MPI_Comm comm);
std::unique_ptr<ParticleExchange> make_rma_notify_particle_exchange(MPI_Comm comm);

namespace {

struct Entry {
  std::unique_ptr<Transport> (*make)(MPI_Comm, const TransportLimits&);
  std::vector<std::string> models = {};     // empty: every model
  std::vector<std::string> schedules = {};  // empty: every schedule
  // Threads that share the transport's MPI requests (else one transport per thread).
  std::vector<std::unique_ptr<Transport>> (*make_for_threads)(std::span<const MPI_Comm>,
                                                              const TransportLimits&) = nullptr;
  // Why this MPI library cannot run the transport, or "" if it can.
  std::string (*unavailable)() = nullptr;
  // The particle exchange of the same design (MiniMD's irregular halos), or none.
  std::unique_ptr<ParticleExchange> (*make_particles)(MPI_Comm) = nullptr;
};

const detail::Registry<Entry>& registry() {
  static const detail::Registry<Entry> transports{
      "transport",
      {
          {"neighbor", {make_neighbor_transport}},
          {"p2p", {.make = make_p2p_transport, .make_particles = make_p2p_particle_exchange}},
          // One partition per thread of the multiple model; flat is its one-thread case.
          {"partitioned",
           {make_partitioned_transport,
            {"flat", "multiple"},
            {},
            make_partitioned_thread_transports,
            partitioned_unavailable}},
          {"persistent", {make_persistent_transport}},
          {"rma-fence", {.make = make_rma_fence_transport, .make_particles = make_rma_fence_particle_exchange}},
          {"rma-notify", {.make = make_rma_notify_transport, .make_particles = make_rma_notify_particle_exchange}},
      }};
  return transports;
}

std::string listed(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

std::vector<std::string> transport_names() { return registry().names(); }

void check_transport_name(std::string_view name) { registry().at(name); }

std::unique_ptr<Transport> make_transport(std::string_view name, MPI_Comm comm, const TransportLimits& limits) {
  return registry().at(name).make(comm, limits);
}

std::vector<std::unique_ptr<Transport>> make_thread_transports(std::string_view name, std::span<const MPI_Comm> comms,
                                                               const TransportLimits& limits) {
  const Entry& entry = registry().at(name);
  if (entry.make_for_threads) return entry.make_for_threads(comms, limits);
  std::vector<std::unique_ptr<Transport>> transports;
  for (MPI_Comm comm : comms) transports.push_back(entry.make(comm, limits));
  return transports;
}

TransportSupport transport_support(std::string_view name) {
  const Entry& entry = registry().at(name);
  return {entry.schedules.empty() ? schedule_names() : entry.schedules,
          entry.models.empty() ? model_names() : entry.models};
}

void check_transport_support(std::string_view transport, std::string_view schedule, std::string_view model) {
  const Entry& entry = registry().at(transport);
  const TransportSupport support = transport_support(transport);
  const auto has = [](const std::vector<std::string>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (!has(support.models, model) || !has(support.schedules, schedule))
    throw ValueError(detail::concat("transport '", transport, "' does not support model '", model, "' with schedule '",
                                    schedule, "'; it supports the models ", listed(support.models),
                                    " with the schedules ", listed(support.schedules)));
  if (entry.unavailable)
    if (const std::string why = entry.unavailable(); !why.empty()) throw ValueError(why);
}

std::vector<std::string> particle_transport_names() {
  std::vector<std::string> names;
  for (const std::string& name : registry().names())
    if (registry().at(name).make_particles) names.push_back(name);
  return names;
}

void check_particle_transport(std::string_view transport) {
  const std::vector<std::string> names = registry().names();
  if (std::find(names.begin(), names.end(), transport) == names.end())
    throw ValueError(detail::concat("unknown transport '", transport,
                                    "'; particle transports: ", listed(particle_transport_names())));
  if (!registry().at(transport).make_particles)
    throw ValueError(detail::concat(
        "transport '", transport,
        "' moves grid faces only, not particles; particle transports: ", listed(particle_transport_names())));
}

std::unique_ptr<ParticleExchange> make_particle_exchange(std::string_view transport, MPI_Comm comm) {
  check_particle_transport(transport);
  return registry().at(transport).make_particles(comm);
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

void deliver_to_self(std::span<const FaceMessage> messages, int self) {
  for (const FaceMessage& message : messages) {
    if (message.neighbour != self) continue;
    for (const FaceMessage& target : messages)
      if (target.neighbour == self && target.receive_tag == message.send_tag)
        std::memcpy(target.receive, message.send, static_cast<std::size_t>(message.lanes) * sizeof(double));
  }
}

}  // namespace hybridfd
