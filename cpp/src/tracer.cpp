// Tracer: buffers, and the clock offset of every rank against rank 0 (GPAW journal
// Sect. 7.1: a profile is only readable if the ranks' lines share one time axis).
#include "hybridfd/tracer.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "format.hpp"
#include "hybridfd/errors.hpp"

namespace hybridfd {
namespace {

// Round trips per rank; the shortest one is kept (the least disturbed by the scheduler).
constexpr int sync_rounds = 16;
constexpr int sync_tag = 7;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Tracer::Clock::now().time_since_epoch()).count();
}

// This rank's clock minus rank 0's, and half the round trip it was measured in: rank 0
// asks, the other rank answers with its clock, rank 0 takes the answer as read at the
// middle of the round trip (Cristian 1989). Collective over comm.
std::array<std::int64_t, 2> offset_to_rank_zero(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::array<std::int64_t, 2> result{0, 0};
  if (rank == 0) {
    for (int other = 1; other < size; ++other) {
      std::array<std::int64_t, 2> best{0, std::numeric_limits<std::int64_t>::max()};
      for (int round = 0; round < sync_rounds; ++round) {
        std::int64_t answer = 0;
        const std::int64_t asked = now_ns();
        MPI_Send(nullptr, 0, MPI_INT64_T, other, sync_tag, comm);
        MPI_Recv(&answer, 1, MPI_INT64_T, other, sync_tag, comm, MPI_STATUS_IGNORE);
        const std::int64_t answered = now_ns();
        const std::int64_t half_trip = (answered - asked) / 2;
        if (half_trip < best[1]) best = {answer - (asked + half_trip), half_trip};
      }
      MPI_Send(best.data(), 2, MPI_INT64_T, other, sync_tag, comm);
    }
  } else {
    for (int round = 0; round < sync_rounds; ++round) {
      MPI_Recv(nullptr, 0, MPI_INT64_T, 0, sync_tag, comm, MPI_STATUS_IGNORE);
      const std::int64_t answer = now_ns();
      MPI_Send(&answer, 1, MPI_INT64_T, 0, sync_tag, comm);
    }
    MPI_Recv(result.data(), 2, MPI_INT64_T, 0, sync_tag, comm, MPI_STATUS_IGNORE);
  }
  return result;
}

}  // namespace

std::string_view trace_kind_name(TraceKind kind) {
  switch (kind) {
    case TraceKind::pack: return "pack";
    case TraceKind::post: return "post";
    case TraceKind::wait: return "wait";
    case TraceKind::progress: return "progress";
    case TraceKind::unpack: return "unpack";
    case TraceKind::compute: return "compute";
    case TraceKind::apply: return "apply";
  }
  return "unknown";
}

void Tracer::start(MPI_Comm comm, int threads, std::int64_t capacity) {
  if (threads < 1) throw ValueError(detail::concat("tracer: threads ", threads, " must be at least 1"));
  if (capacity < 1) throw ValueError(detail::concat("tracer: events per thread ", capacity, " must be at least 1"));
  on_ = false;
  if (static_cast<std::size_t>(threads) != buffers_.size())
    buffers_ = std::vector<Buffer>(static_cast<std::size_t>(threads));
  for (Buffer& buffer : buffers_) {
    if (static_cast<std::int64_t>(buffer.events.size()) < capacity)
      buffer.events.resize(static_cast<std::size_t>(capacity));
    buffer.size = 0;
    buffer.dropped = 0;
  }
  capacity_ = capacity;
  const auto [offset, uncertainty] = offset_to_rank_zero(comm);
  MPI_Barrier(comm);
  origin_ = Clock::now();
  const std::int64_t origin_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(origin_.time_since_epoch()).count();
  std::int64_t origin_of_rank_zero = origin_ns;
  MPI_Bcast(&origin_of_rank_zero, 1, MPI_INT64_T, 0, comm);
  // An event at t ns after this rank's origin happened at origin + t on this clock, that
  // is origin + t - offset on rank 0's, and (origin - offset - origin of rank 0) + t
  // after rank 0's origin.
  sync_ = {origin_ns - offset - origin_of_rank_zero, uncertainty};
  on_ = true;
}

std::span<const TraceEvent> Tracer::events(int thread) const {
  const Buffer& buffer = buffers_.at(static_cast<std::size_t>(thread));
  return {buffer.events.data(), static_cast<std::size_t>(buffer.size)};
}

std::int64_t Tracer::dropped(int thread) const { return buffers_.at(static_cast<std::size_t>(thread)).dropped; }

}  // namespace hybridfd
