// Tracer: off records nothing; on, each thread fills its own preallocated buffer in order
// and counts what a full buffer drops; restarting forgets; rank 0's clock shift is 0.
// Run under mpiexec on any number of ranks. Prints "ok" and exits 0, or names the failed
// check and exits 1.
#include "hybridfd/tracer.hpp"

#include <mpi.h>
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "hybridfd/errors.hpp"

namespace {

using hybridfd::TraceKind;
using hybridfd::Tracer;
using hybridfd::TraceSpan;

void check(bool condition, const std::string& what) {
  if (condition) return;
  std::printf("FAILED: %s\n", what.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  Tracer tracer;
  {
    const TraceSpan off(&tracer, 0, TraceKind::compute, 0);
  }
  check(!tracer.on() && tracer.threads() == 0, "a tracer never started has no buffers and is off");
  {
    const TraceSpan none(nullptr, 0, TraceKind::compute, 0);
  }  // no tracer at all: a no-op

  constexpr int threads = 3;
  constexpr std::int64_t capacity = 4;
  tracer.start(MPI_COMM_WORLD, threads, capacity);
  check(tracer.on(), "on after start");
  if (rank == 0) check(tracer.clock_sync().shift_ns == 0, "rank 0's events are on its own clock");
  check(tracer.clock_sync().uncertainty_ns >= 0, "the clock offset's error bound is not negative");
  // Thread t records t + 2 events: threads 2's last one does not fit.
#pragma omp parallel num_threads(threads)
  {
    const int thread = omp_get_thread_num();
    for (int k = 0; k < thread + 2 + (thread == 2 ? 1 : 0); ++k) {
      const TraceSpan span(&tracer, thread, k % 2 ? TraceKind::compute : TraceKind::pack, k);
    }
  }
  for (int thread = 0; thread < threads; ++thread) {
    const auto events = tracer.events(thread);
    const std::int64_t recorded = std::min<std::int64_t>(thread + 2 + (thread == 2 ? 1 : 0), capacity);
    check(static_cast<std::int64_t>(events.size()) == recorded,
          "thread " + std::to_string(thread) + " recorded " + std::to_string(events.size()) + " events");
    check(tracer.dropped(thread) == (thread == 2 ? 1 : 0), "thread " + std::to_string(thread) + " dropped count");
    for (std::size_t k = 0; k < events.size(); ++k) {
      check(events[k].batch == static_cast<int>(k), "events in the order recorded");
      check(events[k].kind == (k % 2 ? TraceKind::compute : TraceKind::pack), "kinds kept");
      check(events[k].start_ns <= events[k].end_ns, "an event ends after it starts");
      if (k > 0) check(events[k - 1].end_ns <= events[k].start_ns, "one thread's events do not overlap");
    }
  }
  tracer.stop();
  {
    const TraceSpan after(&tracer, 0, TraceKind::wait, 9);
  }
  check(tracer.events(0).size() == 2, "nothing recorded once stopped; the events stay");
  tracer.start(MPI_COMM_WORLD, threads, capacity);
  check(tracer.events(2).empty() && tracer.dropped(2) == 0, "a new start forgets the earlier events");
  try {
    tracer.start(MPI_COMM_WORLD, threads, 0);
    check(false, "capacity 0 refused");
  } catch (const hybridfd::ValueError& error) {
    check(std::string(error.what()).find("events per thread 0") != std::string::npos, error.what());
  }
  if (rank == 0) std::printf("ok\n");
  MPI_Finalize();
  return 0;
}
