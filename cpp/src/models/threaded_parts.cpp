// A transport that sends each large message in parts, one per thread, every thread on its
// own communicator through its own inner transport (Rabenseifner and Wellein 2003, Sect. 5:
// several threads communicating saturate an inter-node link that one thread cannot).
// Messages smaller than the parts' minimum go whole, by the thread of their axis. Both
// ends split a face's message the same way, as both know its length and the team size.
#include <vector>

#include "shared_grids.hpp"

namespace hybridfd {
namespace {

// Below this a part costs more in per-message overhead than a thread saves in copying.
constexpr std::int64_t minimum_part_lanes = 1024;

class ThreadedParts final : public Transport {
 public:
  ThreadedParts(const ThreadTeam& team, const detail::DuplicatedCommunicators& comms, std::string_view inner,
                const TransportLimits& limits)
      : team_(team),
        parts_(static_cast<std::size_t>(limits.max_in_flight), std::vector<std::vector<FaceMessage>>(team.size())),
        inner_tickets_(static_cast<std::size_t>(limits.max_in_flight), std::vector<int>(team.size(), -1)) {
    MPI_Comm_rank(comms[0], &rank_);
    for (int thread = 0; thread < team.size(); ++thread) inner_.push_back(make_transport(inner, comms[thread], limits));
    for (auto& ticket : parts_)
      for (auto& parts : ticket) parts.reserve(static_cast<std::size_t>(limits.max_messages));
  }

  int start(std::span<const FaceMessage> messages) override {
    const int ticket = next_;
    next_ = (next_ + 1) % static_cast<int>(parts_.size());
    auto& parts = parts_[static_cast<std::size_t>(ticket)];
    for (auto& list : parts) list.clear();  // keeps capacity: no allocation
    const std::int64_t threads = team_.size();
    for (const FaceMessage& message : messages) {
      if (message.neighbour == MPI_PROC_NULL || message.neighbour == rank_) continue;
      if (message.lanes < threads * minimum_part_lanes) {
        // Both ends of a pair of messages pick the same thread: a pair's tags are a
        // direction and its opposite.
        const int pair = std::min(message.send_tag, message.receive_tag);
        parts[static_cast<std::size_t>((pair / 2) % threads)].push_back(message);
        continue;
      }
      for (std::int64_t thread = 0; thread < threads; ++thread) {
        const std::int64_t begin = message.lanes * thread / threads, end = message.lanes * (thread + 1) / threads;
        FaceMessage part = message;
        part.send += begin, part.receive += begin, part.lanes = end - begin;
        parts[static_cast<std::size_t>(thread)].push_back(part);
      }
    }
    deliver_to_self(messages, rank_);
    auto post = [&](int thread) {
      const auto index = static_cast<std::size_t>(thread);
      inner_tickets_[static_cast<std::size_t>(ticket)][index] = inner_[index]->start(parts[index]);
    };
    team_.run(post);
    return ticket;
  }

  void finish(int ticket) override {
    auto wait = [&](int thread) {
      const auto index = static_cast<std::size_t>(thread);
      inner_[index]->finish(inner_tickets_[static_cast<std::size_t>(ticket)][index]);
    };
    team_.run(wait);
  }

  // Called by thread 0 alone while the others compute (allowed: MPI_THREAD_MULTIPLE).
  void progress(int ticket) override {
    for (std::size_t index = 0; index < inner_.size(); ++index)
      inner_[index]->progress(inner_tickets_[static_cast<std::size_t>(ticket)][index]);
  }

 private:
  const ThreadTeam& team_;
  int rank_ = 0;
  int next_ = 0;
  std::vector<std::unique_ptr<Transport>> inner_;
  std::vector<std::vector<std::vector<FaceMessage>>> parts_;  // [ticket][thread]
  std::vector<std::vector<int>> inner_tickets_;               // [ticket][thread]
};

}  // namespace

std::unique_ptr<Transport> make_threaded_parts_transport(const ThreadTeam& team,
                                                         const detail::DuplicatedCommunicators& comms,
                                                         std::string_view inner, const TransportLimits& limits) {
  return std::make_unique<ThreadedParts>(team, comms, inner, limits);
}

}  // namespace hybridfd
