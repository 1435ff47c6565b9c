// ThreadTeam: the threads of one Operator (docs/design.md, "Models"). Built on the OpenMP
// runtime, so OMP_NUM_THREADS, OMP_PLACES and OMP_PROC_BIND place the threads the way
// users of OpenMP codes expect, and the runtime keeps its threads between applies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hybridfd {

class ThreadTeam {
 public:
  // Throws ValueError for threads outside 1..max_team_threads() (check_team_threads).
  explicit ThreadTeam(int threads);

  int size() const { return size_; }

  // Runs body(thread) on every thread of the team, thread 0 being the caller, and returns
  // when all have returned; then rethrows the first exception any thread threw. Bodies
  // never wait for one another (no barriers inside), so a thread that throws cannot leave
  // the others waiting: an error reaches the caller, never a deadlock.
  template <class Body>
  void run(Body& body) const {
    run_erased(&invoke<Body>, &body);
  }

  // The logical CPU each thread ran on during a run made now (sched_getcpu), in thread
  // order: where OMP_PLACES / OMP_PROC_BIND put the team.
  std::vector<int> cpus() const;

 private:
  template <class Body>
  static void invoke(void* body, int thread) {
    (*static_cast<Body*>(body))(thread);
  }
  void run_erased(void (*function)(void*, int), void* body) const;

  int size_;
};

// The most threads a team may have: OMP_THREAD_LIMIT, and the processes and threads
// this user may run (RLIMIT_NPROC, `ulimit -u`), beyond which the OpenMP runtime fails
// to start the team and takes the process down.
int max_team_threads();

// Throws ValueError naming `threads` unless 1 <= threads <= max_team_threads(): the one
// check of a team's size, made by ThreadTeam and, before any collective, by Operator.
void check_team_threads(int threads);

// Threads for a threaded model: `requested` if given, else OMP_NUM_THREADS if set, else 1.
int resolve_threads(std::optional<int> requested);

// The OpenMP placement in force and the CPUs the threads ran on, e.g.
// "OMP_PROC_BIND=close, OMP_PLACES=cores (2 places); threads on CPUs 0,1".
std::string placement_text(const ThreadTeam& team);

// How a thread team shares a schedule's work (the masteronly models). The default, no
// team, is the calling thread doing everything.
struct TeamWork {
  const ThreadTeam* team = nullptr;
  bool parallel_pack = false;  // faces packed by all threads (masteronly-threaded-comm)
  bool master_waits = false;   // thread 0 completes the batch in flight while the others
                               // compute (funneled-overlap)
  double master_share = 1.0;   // thread 0's share of each grid, relative to another thread's

  int threads() const { return team ? team->size() : 1; }
};

}  // namespace hybridfd
