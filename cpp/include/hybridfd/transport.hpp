// Transport: how face messages move between ranks (docs/design.md). A transport is one
// file in cpp/src/transports/ plus one line in the registry in transport.cpp.
#pragma once

#include <mpi.h>

#include <bit>
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
// receive_tag equals its send_tag. (hybridfd's own schedules send none: they copy such
// ghosts straight from the input grid; the delivery serves other callers of a transport.)
struct FaceMessage {
  int neighbour = MPI_PROC_NULL;
  const double* send = nullptr;
  double* receive = nullptr;
  std::int64_t lanes = 0;
  int send_tag = 0;
  int receive_tag = 0;
};

// Moves the face messages of one batch. Up to `max_in_flight` batches may be under way at
// once (double buffering has two); each start() returns a ticket naming its batch.
class Transport {
 public:
  virtual ~Transport() = default;
  // Starts moving the messages; their buffers must stay untouched until finish(ticket).
  virtual int start(std::span<const FaceMessage> messages) = 0;
  // Returns when every message of that batch has arrived and every send buffer is free.
  virtual void finish(int ticket) = 0;
  // Lets the MPI library move that batch's messages (it may only do so inside an MPI
  // call): called between compute blocks by schedules with progress on.
  virtual void progress(int ticket) = 0;
  // Called by each thread of a model whose threads communicate (multiple) once its share
  // of an apply is done: a transport whose threads share MPI requests (partitioned)
  // stands in for a thread that has no more batches.
  virtual void apply_done() {}
};

// What a transport must be ready for, known when it is made.
struct TransportLimits {
  int max_messages = 6;        // messages per start()
  int max_in_flight = 2;       // batches started and not yet finished
  std::int64_t max_lanes = 0;  // float64 lanes of the largest message
  // The directions messages travel in, bit t for tag t (halo_plan.hpp: the six faces, and
  // a general stencil's edges and corners); the same on every rank.
  std::uint32_t directions = 0b111111;
  int direction_count() const { return std::popcount(directions); }
  // The place of tag `tag` among the directions, 0..direction_count()-1.
  int direction_index(int tag) const { return std::popcount(directions & ((std::uint32_t{1} << tag) - 1)); }
};

// The rank next to this one, in the Cartesian communicator `cartesian` (or a duplicate of
// it), in the direction of tag `tag` (halo_plan.hpp); MPI_PROC_NULL beyond a
// non-periodic edge.
int neighbour_towards(MPI_Comm cartesian, int tag);

// Collective over comm for a transport whose traits say collective_setup (the one-sided
// ones make an MPI window). Throws ValueError naming the transport and listing the known
// ones.
std::unique_ptr<Transport> make_transport(std::string_view name, MPI_Comm comm, const TransportLimits& limits);
std::vector<std::string> transport_names();
// Throws ValueError naming the transport and listing the known ones.
void check_transport_name(std::string_view name);

// One transport per thread of the multiple model, thread t's on comms[t]. Most are made
// one by one; a transport whose threads share MPI requests (partitioned: one partition per
// thread) makes them together. Collective over the communicators.
std::vector<std::unique_ptr<Transport>> make_thread_transports(std::string_view name, std::span<const MPI_Comm> comms,
                                                               const TransportLimits& limits);

// The schedules and models a transport works with (each: all the registry knows unless
// the transport declares fewer).
struct TransportSupport {
  std::vector<std::string> schedules;
  std::vector<std::string> models;
};
TransportSupport transport_support(std::string_view name);
// What a transport needs of the MPI library, declared in its registry line.
struct TransportTraits {
  int mpi_version;             // the MPI standard (major version) that introduced what it uses
  std::string_view mpi_needs;  // that part of MPI, with the calls it makes
  bool collective_setup;       // making it is collective over the communicator
};
// Throws ValueError naming the transport and listing the known ones.
TransportTraits transport_traits(std::string_view name);
// Why this MPI library (and the header hybridfd was built with) cannot run the
// transport, or "" if it can. Local.
std::string transport_unavailable(std::string_view name);

// Local. Throws ValueError if the transport does not support the schedule or the model
// (listing what it does support), or cannot run on this MPI library (naming it).
void check_transport_support(std::string_view transport, std::string_view schedule, std::string_view model);

// Delivers the self-addressed messages among `messages` by copying. Shared by all
// transports so that a periodic axis of one box costs a memcpy, never an MPI call.
void deliver_to_self(std::span<const FaceMessage> messages, int self);

}  // namespace hybridfd
