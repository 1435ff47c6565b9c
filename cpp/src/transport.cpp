// Transport registry: one line per transport, with what it needs of MPI (its traits),
// the schedules and models it supports (none listed: all) and, for one that needs more
// of MPI than the others, a check that this MPI library has it.
#include "hybridfd/transport.hpp"

#include <algorithm>
#include <cstring>

#include "format.hpp"
#include "hybridfd/model.hpp"
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

namespace {

struct Entry {
  std::unique_ptr<Transport> (*make)(MPI_Comm, const TransportLimits&);
  TransportTraits traits;
  std::vector<std::string> models = {};     // empty: every model
  std::vector<std::string> schedules = {};  // empty: every schedule
  // Threads that share the transport's MPI requests (else one transport per thread).
  std::vector<std::unique_ptr<Transport>> (*make_for_threads)(std::span<const MPI_Comm>,
                                                              const TransportLimits&) = nullptr;
  // Why this MPI library cannot run the transport, or "" if it can.
  std::string (*unavailable)() = nullptr;
};

const detail::Registry<Entry>& registry() {
  static const detail::Registry<Entry> transports{
      "transport",
      {
          {"neighbor",
           {make_neighbor_transport,
            {3, "neighbourhood collectives (MPI_Dist_graph_create_adjacent, MPI_Ineighbor_alltoallw)", true}}},
          {"p2p", {make_p2p_transport, {1, "point-to-point (MPI_Irecv, MPI_Isend)", false}}},
          // One partition per thread of the multiple model; flat is its one-thread case.
          {"partitioned",
           {make_partitioned_transport,
            {4, "partitioned communication (MPI_Psend_init, MPI_Precv_init, MPI_Pready, MPI_Parrived)", true},
            {"flat", "multiple"},
            {},
            make_partitioned_thread_transports,
            partitioned_unavailable}},
          {"persistent",
           {make_persistent_transport, {1, "persistent point-to-point (MPI_Recv_init, MPI_Send_init)", false}}},
          {"rma-fence",
           {make_rma_fence_transport, {3, "one-sided windows with fences (MPI_Win_allocate, MPI_Put)", true}}},
          {"rma-notify",
           {make_rma_notify_transport,
            {3, "one-sided windows with passive-target atomics (MPI_Win_lock_all, MPI_Fetch_and_op, MPI_Put)", true}}},
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

TransportTraits transport_traits(std::string_view name) { return registry().at(name).traits; }

std::string transport_unavailable(std::string_view name) {
  const Entry& entry = registry().at(name);
  return entry.unavailable ? entry.unavailable() : std::string();
}

void check_transport_support(std::string_view transport, std::string_view schedule, std::string_view model) {
  const TransportSupport support = transport_support(transport);
  const auto has = [](const std::vector<std::string>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (!has(support.models, model) || !has(support.schedules, schedule))
    throw ValueError(detail::concat("transport '", transport, "' does not support model '", model, "' with schedule '",
                                    schedule, "'; it supports the models ", listed(support.models),
                                    " with the schedules ", listed(support.schedules)));
  if (const std::string why = transport_unavailable(transport); !why.empty()) throw ValueError(why);
}

int neighbour_towards(MPI_Comm cartesian, int tag) {
  int dims[3] = {1, 1, 1}, periods[3] = {0, 0, 0}, coords[3] = {0, 0, 0};
  MPI_Cart_get(cartesian, 3, dims, periods, coords);
  const Offset direction = tag_direction(tag);
  for (int axis = 0; axis < 3; ++axis) {
    coords[axis] += direction[axis];
    if (coords[axis] < 0 || coords[axis] >= dims[axis]) {
      if (!periods[axis]) return MPI_PROC_NULL;
      coords[axis] = (coords[axis] + dims[axis]) % dims[axis];
    }
  }
  int rank = MPI_PROC_NULL;
  MPI_Cart_rank(cartesian, coords, &rank);
  return rank;
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
