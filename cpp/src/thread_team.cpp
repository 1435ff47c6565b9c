#include "hybridfd/thread_team.hpp"

#include <omp.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <stdexcept>

#include "format.hpp"
#include "hybridfd/errors.hpp"

namespace hybridfd {

ThreadTeam::ThreadTeam(int threads) : size_(threads) { check_team_threads(threads); }

void check_team_threads(int threads) {
  if (threads < 1) throw ValueError(detail::concat("threads ", threads, " must be at least 1"));
  // Only a team of several threads starts any.
  if (threads > 1 && threads > max_team_threads())
    throw ValueError(detail::concat("threads ", threads, " is more than the ", max_team_threads(),
                                    " threads this process may start (OMP_THREAD_LIMIT, ulimit -u, "
                                    "/proc/sys/kernel/threads-max)"));
}

void ThreadTeam::run_erased(void (*function)(void*, int), void* body) const {
  if (size_ == 1) {
    function(body, 0);
    return;
  }
  std::exception_ptr error;
  int started = 0;
#pragma omp parallel num_threads(size_)
  {
    const int thread = omp_get_thread_num();
    if (thread == 0) started = omp_get_num_threads();
    // A smaller team (OMP_THREAD_LIMIT, a call from inside another parallel region) would
    // leave grids uncomputed: then no thread works and the caller is told.
    if (omp_get_num_threads() == size_) {
      try {
        function(body, thread);
      } catch (...) {
#pragma omp critical(hybridfd_thread_team_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (started != size_)
    throw std::runtime_error(detail::concat("the OpenMP runtime started ", started, " threads instead of ", size_,
                                            " (OMP_THREAD_LIMIT, or an apply from inside a parallel region?)"));
  if (error) std::rethrow_exception(error);
}

std::vector<int> ThreadTeam::cpus() const {
  std::vector<int> result(static_cast<std::size_t>(size_), -1);
  auto record = [&](int thread) { result[static_cast<std::size_t>(thread)] = sched_getcpu(); };
  run(record);
  return result;
}

int max_team_threads() {
  std::int64_t limit = omp_get_thread_limit();
  rlimit processes{};
  if (getrlimit(RLIMIT_NPROC, &processes) == 0 && processes.rlim_cur != RLIM_INFINITY)
    limit = std::min<std::int64_t>(limit, static_cast<std::int64_t>(processes.rlim_cur));
  // The system-wide limit, where RLIMIT_NPROC is unlimited (root, containers).
  std::ifstream system_limit("/proc/sys/kernel/threads-max");
  std::int64_t system_threads = 0;
  if (system_limit >> system_threads && system_threads > 0) limit = std::min(limit, system_threads);
  return static_cast<int>(limit);
}

int resolve_threads(std::optional<int> requested) {
  if (requested) return *requested;
  const char* variable = std::getenv("OMP_NUM_THREADS");
  // The runtime parses the variable (a list such as "4,2" means 4 at the outer level).
  return variable && *variable ? omp_get_max_threads() : 1;
}

std::string placement_text(const ThreadTeam& team) {
  const char* bind_names[] = {"false", "true", "primary", "close", "spread"};
  const int bind = static_cast<int>(omp_get_proc_bind());
  const char* places = std::getenv("OMP_PLACES");
  std::string text = detail::concat("OMP_PROC_BIND=", bind >= 0 && bind < 5 ? bind_names[bind] : "?");
  if (places && *places) text += detail::concat(", OMP_PLACES=", places, " (", omp_get_num_places(), " places)");
  text += "; threads on CPUs ";
  const std::vector<int> cpus = team.cpus();
  for (std::size_t thread = 0; thread < cpus.size(); ++thread) text += detail::concat(thread ? "," : "", cpus[thread]);
  return text;
}

}  // namespace hybridfd
