// rma-fence: the MiniMD slides' Hybrid-Barrier design in portable MPI-3 RMA. Every rank
// exposes a window of receive slots, one per batch in flight and per direction of
// travel (the face tags 0..5); a batch's faces are written into the neighbours' slots
// with MPI_Put between two MPI_Win_fence calls, then copied from this rank's own slots
// into the schedule's receive buffers. No receive is posted and nothing is matched.
//
// Both ends compute a slot's place from (ticket, tag) alone, as every rank starts and
// finishes the same batches in the same order (one schedule, one G for all ranks). The
// fence is collective over the communicator, and every rank calls the same sequence of
// fences for the same reason. A put issued after a fence reaches its target only after
// the target has called that fence too (MPI-3.1 Sect. 11.5.1), so a slot is never
// overwritten before its owner has copied it out: it copies in finish(), before the
// fence of the start() that reuses the slot.
#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "hybridfd/transport.hpp"

namespace hybridfd {
namespace {

class RmaFence final : public Transport {
 public:
  RmaFence(MPI_Comm comm, const TransportLimits& limits)
      : limits_(limits),
        batches_(static_cast<std::size_t>(limits.max_in_flight)),
        complete_(static_cast<std::size_t>(limits.max_in_flight), true) {
    MPI_Comm_rank(comm, &rank_);
    // An origin places its put by the slot size, so every rank uses the largest: boxes
    // of an uneven split have faces of different sizes.
    slot_lanes_ = std::max<std::int64_t>(limits.max_lanes, 1);
    MPI_Allreduce(MPI_IN_PLACE, &slot_lanes_, 1, MPI_INT64_T, MPI_MAX, comm);
    const MPI_Aint bytes =
        static_cast<MPI_Aint>(limits.max_in_flight) * limits.direction_count() * slot_lanes_ * sizeof(double);
    MPI_Win_allocate(bytes, sizeof(double), MPI_INFO_NULL, comm, &slots_, &window_);
    for (auto& batch : batches_) batch.reserve(static_cast<std::size_t>(limits.max_messages));
  }

  ~RmaFence() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Win_free(&window_);
  }

  int start(std::span<const FaceMessage> messages) override {
    const int ticket = next_;
    next_ = (next_ + 1) % static_cast<int>(batches_.size());
    // Closes the epoch of the batch still open, if any (completing its puts), and opens
    // this batch's: a fence both completes and begins.
    MPI_Win_fence(0, window_);
    std::fill(complete_.begin(), complete_.end(), true);
    complete_[static_cast<std::size_t>(ticket)] = false;
    auto& batch = batches_[static_cast<std::size_t>(ticket)];
    batch.assign(messages.begin(), messages.end());  // within the reserved capacity
    for (const FaceMessage& message : messages)
      if (message.neighbour != MPI_PROC_NULL && message.neighbour != rank_)
        MPI_Put(message.send, static_cast<int>(message.lanes), MPI_DOUBLE, message.neighbour,
                slot(ticket, message.send_tag), static_cast<int>(message.lanes), MPI_DOUBLE, window_);
    deliver_to_self(messages, rank_);
    return ticket;
  }

  void finish(int ticket) override {
    if (!complete_[static_cast<std::size_t>(ticket)]) {
      MPI_Win_fence(0, window_);
      std::fill(complete_.begin(), complete_.end(), true);
    }
    for (const FaceMessage& message : batches_[static_cast<std::size_t>(ticket)])
      if (message.neighbour != MPI_PROC_NULL && message.neighbour != rank_)
        std::memcpy(message.receive, slots_ + slot(ticket, message.receive_tag),
                    static_cast<std::size_t>(message.lanes) * sizeof(double));
  }

  // Puts complete at the closing fence; there is nothing to test before it.
  void progress(int) override {}

 private:
  MPI_Aint slot(int ticket, int tag) const {
    return (static_cast<MPI_Aint>(ticket) * limits_.direction_count() + limits_.direction_index(tag)) *
           static_cast<MPI_Aint>(slot_lanes_);
  }

  TransportLimits limits_;
  std::int64_t slot_lanes_ = 1;  // the same on every rank
  int rank_ = 0;
  int next_ = 0;
  double* slots_ = nullptr;
  MPI_Win window_ = MPI_WIN_NULL;
  std::vector<std::vector<FaceMessage>> batches_;  // per ticket: the messages started
  std::vector<bool> complete_;                     // per ticket: its puts have completed
};

}  // namespace

std::unique_ptr<Transport> make_rma_fence_transport(MPI_Comm comm, const TransportLimits& limits) {
  return std::make_unique<RmaFence>(comm, limits);
}

}  // namespace hybridfd
