// ThreadTeam: every thread runs the body once; an exception thrown by any one thread
// reaches the caller once all threads have returned (never a deadlock); the team is
// reusable afterwards. Prints "ok" and exits 0, or names the failed check and exits 1.
#include "hybridfd/thread_team.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "hybridfd/errors.hpp"

namespace {

void check(bool condition, const std::string& what) {
  if (condition) return;
  std::printf("FAILED: %s\n", what.c_str());
  std::exit(1);
}

}  // namespace

int main() {
  for (int threads = 1; threads <= 4; ++threads) {
    const hybridfd::ThreadTeam team(threads);
    std::vector<std::atomic<int>> runs(static_cast<std::size_t>(threads));
    auto count = [&](int thread) { ++runs[static_cast<std::size_t>(thread)]; };
    team.run(count);
    for (int failing = 0; failing < threads; ++failing) {
      std::atomic<int> returned = 0;
      auto fail = [&](int thread) {
        ++returned;
        if (thread == failing) throw std::runtime_error("thread " + std::to_string(thread));
      };
      try {
        team.run(fail);
        check(false, "no exception from thread " + std::to_string(failing) + " of " + std::to_string(threads));
      } catch (const std::runtime_error& error) {
        check(error.what() == "thread " + std::to_string(failing), std::string("wrong exception: ") + error.what());
      }
      check(returned == threads, "run() returned before every thread had run");
    }
    team.run(count);
    for (const auto& ran : runs) check(ran == 2, "a thread did not run exactly once per run()");
    check(static_cast<int>(team.cpus().size()) == threads, "cpus() lists one CPU per thread");
  }
  try {
    hybridfd::ThreadTeam none(0);
    check(false, "a team of 0 threads was accepted");
  } catch (const hybridfd::ValueError& error) {
    check(std::string(error.what()) == "threads 0 must be at least 1", error.what());
  }
  std::printf("ok\n");
  return 0;
}
