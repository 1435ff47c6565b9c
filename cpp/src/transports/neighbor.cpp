// neighbor: a batch's faces move in one neighbourhood collective, MPI_Ineighbor_alltoallw
// (MPI-3), or a persistent MPI_Neighbor_alltoallw_init made once per distinct batch and
// restarted with MPI_Start (MPI-4; used when both the header and the library are MPI-4).
// Beyond the GPAW papers: the library sees the whole exchange at once and may schedule it.
//
// Over a distributed-graph communicator of this rank's distinct neighbours, not the
// Cartesian one: a periodic axis cut into 2 boxes lists one rank as both neighbours, and
// 1 box lists this rank itself twice. Which block of a doubly listed neighbour matches
// which was left open until MPI-4.1; MPICH 5 matches by direction, as halos need, but
// MPICH 4.0 and Open MPI 4 need not. Here each distinct neighbour gets one block holding
// all its faces in order of direction of travel (the face tag), which both ends agree on;
// faces to this rank itself are copied. Each block is a datatype over the faces' own
// buffers (MPI_BOTTOM plus absolute addresses), so nothing is packed twice.
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <string_view>
#include <vector>

#include "../format.hpp"
#include "hybridfd/errors.hpp"
#include "hybridfd/halo_plan.hpp"
#include "hybridfd/transport.hpp"

namespace hybridfd {
namespace {

bool same(const FaceMessage& a, const FaceMessage& b) {
  return a.neighbour == b.neighbour && a.send == b.send && a.receive == b.receive && a.lanes == b.lanes &&
         a.send_tag == b.send_tag && a.receive_tag == b.receive_tag;
}

// One distinct batch: its blocks' datatypes, and its persistent request if any.
struct Exchange {
  std::vector<FaceMessage> messages;
  std::vector<int> send_counts, receive_counts;  // 1 for a neighbour with faces, else 0
  std::vector<MPI_Datatype> send_types, receive_types;
  MPI_Request persistent = MPI_REQUEST_NULL;
};

bool library_has_persistent_collectives() {
#if MPI_VERSION >= 4
  int version = 0, subversion = 0;
  MPI_Get_version(&version, &subversion);
  const char* setting = std::getenv("HYBRIDFD_NEIGHBOR_PERSISTENT");  // "0": force MPI-3 (tests)
  return version >= 4 && !(setting && std::string_view(setting) == "0");
#else
  return false;
#endif
}

class Neighbor final : public Transport {
 public:
  Neighbor(MPI_Comm comm, const TransportLimits& limits)
      : persistent_(library_has_persistent_collectives()),
        requests_(static_cast<std::size_t>(limits.max_in_flight), MPI_REQUEST_NULL),
        started_(static_cast<std::size_t>(limits.max_in_flight), nullptr),
        in_flight_(static_cast<std::size_t>(limits.max_in_flight), false),
        persistent_started_(static_cast<std::size_t>(limits.max_in_flight), false) {
    int topology = MPI_UNDEFINED;
    MPI_Topo_test(comm, &topology);
    if (topology != MPI_CART)
      throw ValueError("transport 'neighbor' needs the Cartesian communicator of a Decomposition");
    MPI_Comm_rank(comm, &rank_);
    for (int tag = 0; tag < halo_directions; ++tag) {
      if (!(limits.directions & (std::uint32_t{1} << tag))) continue;
      const int neighbour = neighbour_towards(comm, tag);
      if (neighbour != MPI_PROC_NULL && neighbour != rank_ &&
          std::find(neighbours_.begin(), neighbours_.end(), neighbour) == neighbours_.end())
        neighbours_.push_back(neighbour);
    }
    std::sort(neighbours_.begin(), neighbours_.end());
    // Symmetric: a neighbour's neighbour in the opposite direction is this rank, and
    // every rank exchanges the same directions.
    const int count = static_cast<int>(neighbours_.size());
    MPI_Dist_graph_create_adjacent(comm, count, neighbours_.data(), MPI_UNWEIGHTED, count, neighbours_.data(),
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph_);
    displacements_.assign(neighbours_.size(), 0);
  }

  ~Neighbor() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (Exchange& exchange : exchanges_) {
      if (exchange.persistent != MPI_REQUEST_NULL) MPI_Request_free(&exchange.persistent);
      for (auto* types : {&exchange.send_types, &exchange.receive_types})
        for (MPI_Datatype& type : *types)
          if (type != MPI_DOUBLE) MPI_Type_free(&type);
    }
    MPI_Comm_free(&graph_);
  }

  int start(std::span<const FaceMessage> messages) override {
    const int ticket = next_;
    next_ = (next_ + 1) % static_cast<int>(requests_.size());
    Exchange& exchange = find_or_create(messages);
    const auto index = static_cast<std::size_t>(ticket);
    started_[index] = &exchange;
    // A batch in flight twice at once (the same buffers: e.g. the empty batches of a
    // thread with no part of any message) cannot restart its active persistent request;
    // it goes by MPI_Ineighbor_alltoallw, as every rank decides alike.
    bool active = false;
    for (std::size_t other = 0; other < started_.size(); ++other)
      active =
          active || (other != index && in_flight_[other] && persistent_started_[other] && started_[other] == &exchange);
    persistent_started_[index] = persistent_ && !active;
    in_flight_[index] = true;
    if (persistent_started_[index]) {
      MPI_Start(&exchange.persistent);
    } else {
      MPI_Ineighbor_alltoallw(MPI_BOTTOM, exchange.send_counts.data(), displacements_.data(),
                              exchange.send_types.data(), MPI_BOTTOM, exchange.receive_counts.data(),
                              displacements_.data(), exchange.receive_types.data(), graph_, &requests_[index]);
    }
    deliver_to_self(messages, rank_);
    return ticket;
  }

  void finish(int ticket) override {
    MPI_Wait(request(ticket), MPI_STATUS_IGNORE);
    in_flight_[static_cast<std::size_t>(ticket)] = false;
  }

  void progress(int ticket) override {
    int done = 0;
    MPI_Test(request(ticket), &done, MPI_STATUS_IGNORE);
  }

 private:
  // The request to complete for a ticket. A persistent one stays allocated: completing
  // it again (a ticket finished twice) returns at once, as for a null request.
  MPI_Request* request(int ticket) {
    const auto index = static_cast<std::size_t>(ticket);
    return persistent_started_[index] ? &started_[index]->persistent : &requests_[index];
  }

  // The batch's blocks, made on first use. Every rank makes its distinct batches in the
  // same order (one schedule, the same G), so the collective _init calls match.
  Exchange& find_or_create(std::span<const FaceMessage> messages) {
    for (Exchange& exchange : exchanges_)
      if (exchange.messages.size() == messages.size() &&
          std::equal(messages.begin(), messages.end(), exchange.messages.begin(), same))
        return exchange;
    Exchange& exchange = exchanges_.emplace_back();  // a deque: requests keep their address
    exchange.messages.assign(messages.begin(), messages.end());
    for (const int neighbour : neighbours_) {
      exchange.send_types.push_back(block(messages, neighbour, true));
      exchange.receive_types.push_back(block(messages, neighbour, false));
      exchange.send_counts.push_back(exchange.send_types.back() == MPI_DOUBLE ? 0 : 1);
      exchange.receive_counts.push_back(exchange.receive_types.back() == MPI_DOUBLE ? 0 : 1);
    }
#if MPI_VERSION >= 4
    if (persistent_)
      MPI_Neighbor_alltoallw_init(MPI_BOTTOM, exchange.send_counts.data(), displacements_.data(),
                                  exchange.send_types.data(), MPI_BOTTOM, exchange.receive_counts.data(),
                                  displacements_.data(), exchange.receive_types.data(), graph_, MPI_INFO_NULL,
                                  &exchange.persistent);
#endif
    return exchange;
  }

  // The faces of `messages` to (or from) `neighbour`, in order of direction of travel, as
  // one datatype at absolute addresses; MPI_DOUBLE (sent 0 times) if there are none.
  static MPI_Datatype block(std::span<const FaceMessage> messages, int neighbour, bool sending) {
    std::vector<int> lengths;
    std::vector<MPI_Aint> addresses;
    for (int tag = 0; tag < halo_directions; ++tag)
      for (const FaceMessage& message : messages)
        if (message.neighbour == neighbour && (sending ? message.send_tag : message.receive_tag) == tag) {
          MPI_Aint address = 0;
          MPI_Get_address(sending ? static_cast<const void*>(message.send) : message.receive, &address);
          lengths.push_back(static_cast<int>(message.lanes));
          addresses.push_back(address);
        }
    if (lengths.empty()) return MPI_DOUBLE;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Type_create_hindexed(static_cast<int>(lengths.size()), lengths.data(), addresses.data(), MPI_DOUBLE, &type);
    MPI_Type_commit(&type);
    return type;
  }

  bool persistent_;
  int rank_ = 0;
  int next_ = 0;
  MPI_Comm graph_ = MPI_COMM_NULL;
  std::vector<int> neighbours_;  // distinct, not this rank, ascending
  std::vector<MPI_Aint> displacements_;
  std::deque<Exchange> exchanges_;
  std::vector<MPI_Request> requests_;     // per ticket (MPI-3 path)
  std::vector<Exchange*> started_;        // per ticket
  std::vector<bool> in_flight_;           // per ticket: started, not finished
  std::vector<bool> persistent_started_;  // per ticket: by its persistent request
};

}  // namespace

std::unique_ptr<Transport> make_neighbor_transport(MPI_Comm comm, const TransportLimits& limits) {
  return std::make_unique<Neighbor>(comm, limits);
}

}  // namespace hybridfd
