// Duplicated communicators, one per thread of a model whose threads call MPI at the same
// time: each thread's messages then match only its own (no tag arithmetic that collides
// at many threads). Private to the core.
#pragma once

#include <mpi.h>

#include <vector>

namespace hybridfd::detail {

class DuplicatedCommunicators {
 public:
  // Collective over comm.
  DuplicatedCommunicators(MPI_Comm comm, int count) : comms_(static_cast<std::size_t>(count), MPI_COMM_NULL) {
    for (MPI_Comm& duplicate : comms_) MPI_Comm_dup(comm, &duplicate);
  }
  ~DuplicatedCommunicators() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (MPI_Comm& duplicate : comms_) MPI_Comm_free(&duplicate);
  }
  DuplicatedCommunicators(const DuplicatedCommunicators&) = delete;
  DuplicatedCommunicators& operator=(const DuplicatedCommunicators&) = delete;

  MPI_Comm operator[](int thread) const { return comms_[static_cast<std::size_t>(thread)]; }
  int size() const { return static_cast<int>(comms_.size()); }

 private:
  std::vector<MPI_Comm> comms_;
};

}  // namespace hybridfd::detail
