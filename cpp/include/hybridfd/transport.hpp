// Transport: how face messages move between ranks (DESIGN.md). A transport is one
// file in cpp/src/transports/ plus one line in the registry in transport.cpp.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hybridfd {

// One message to a neighbour and the matching one from it. `send` and `receive` hold
// `lanes` float64 lanes each. A message whose neighbour is this rank itself (a periodic
// axis cut into one box) is delivered by copying to the receive buffer whose
// receive_tag equals its send_tag.
struct FaceMessage {
  int neighbour = MPI_PROC_NULL;
  const double* send = nullptr;
  double* receive = nullptr;
  std::int64_t lanes = 0;
  int send_tag = 0;
  int receive_tag = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Starts moving the messages; buffers must stay untouched until finish().
  virtual void start(std::span<const FaceMessage> messages) = 0;
  // Returns when every message started since the last finish() has arrived.
  virtual void finish() = 0;
};

// Throws ValueError naming the transport and listing the known ones.
std::unique_ptr<Transport> make_transport(std::string_view name, MPI_Comm comm, int max_messages);
std::vector<std::string> transport_names();
// Throws ValueError naming the transport and listing the known ones.
void check_transport_name(std::string_view name);

// Delivers the self-addressed messages among `messages` by copying. Shared by all
// transports so that a periodic axis of one box costs a memcpy, never an MPI call.
void deliver_to_self(std::span<const FaceMessage> messages, int self);

}  // namespace hybridfd
