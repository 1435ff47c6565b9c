// Transport registry: one line per transport.
#include "hybridfd/transport.hpp"

#include <cstring>

#include "registry.hpp"

namespace hybridfd {

std::unique_ptr<Transport> make_p2p_transport(MPI_Comm comm, const TransportLimits& limits);
std::unique_ptr<Transport> make_persistent_transport(MPI_Comm comm, const TransportLimits& limits);
std::unique_ptr<Transport> make_rma_fence_transport(MPI_Comm comm, const TransportLimits& limits);
std::unique_ptr<Transport> make_rma_notify_transport(MPI_Comm comm, const TransportLimits& limits);
std::unique_ptr<Transport> make_neighbor_transport(MPI_Comm comm, const TransportLimits& limits);

namespace {

using Factory = std::unique_ptr<Transport> (*)(MPI_Comm, const TransportLimits&);

const detail::Registry<Factory>& registry() {
  static const detail::Registry<Factory> transports{"transport",
                                                    {
                                                        {"neighbor", make_neighbor_transport},
                                                        {"p2p", make_p2p_transport},
                                                        {"persistent", make_persistent_transport},
                                                        {"rma-fence", make_rma_fence_transport},
                                                        {"rma-notify", make_rma_notify_transport},
                                                    }};
  return transports;
}

}  // namespace

std::vector<std::string> transport_names() { return registry().names(); }

void check_transport_name(std::string_view name) { registry().at(name); }

std::unique_ptr<Transport> make_transport(std::string_view name, MPI_Comm comm, const TransportLimits& limits) {
  return registry().at(name)(comm, limits);
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
