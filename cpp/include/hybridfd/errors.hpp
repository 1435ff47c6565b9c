// Errors and the collective agreement on bad input.
//
// Bad input must be reported on every rank before any halo message is sent, or ranks
// that accepted their input would wait forever for a rank that rejected its own. Each
// rank checks its own arguments, then one small allreduce tells every rank whether any
// rank found a problem; if so, every rank throws the same message, naming the ranks.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

namespace hybridfd {

// Maps to Python's ValueError.
struct ValueError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
// Maps to Python's TypeError.
struct TypeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

enum class ProblemKind : int { none = 0, value = 1, type = 2 };

struct Problem {
  ProblemKind kind = ProblemKind::none;
  std::string message;
};

// Runs check() locally; a ValueError/TypeError it throws becomes this rank's problem.
// Other exceptions propagate unchanged (they are bugs, not bad input).
template <class Check>
std::optional<Problem> find_problem(Check&& check) {
  try {
    check();
  } catch (const TypeError& error) {
    return Problem{ProblemKind::type, error.what()};
  } catch (const ValueError& error) {
    return Problem{ProblemKind::value, error.what()};
  }
  return std::nullopt;
}

// Collective over comm. If any rank has a problem, every rank throws (TypeError if
// any rank's problem is a type problem, else ValueError) with a message that lists
// each distinct message and the ranks that reported it. `agreed_value` is a number
// every rank must share (e.g. the number of grids in a batch); if it differs between
// ranks, that is a ValueError on every rank too. Costs one 3-integer allreduce when
// nothing is wrong.
//
// The message names rank r of comm `rank_names[r]` and lists ranks in ascending order of
// their names: pass the rank in the caller's communicator when comm renumbers it
// (Decomposition::caller_ranks()). Empty: comm's own ranks. Otherwise it must hold one
// name per rank of comm (std::invalid_argument on the ranks that pass a wrong count,
// before any message). The names shape only the message, never the collectives.
void agree_on_problems(MPI_Comm comm, const std::optional<Problem>& local, std::int64_t agreed_value = 0,
                       const char* agreed_value_name = nullptr, std::span<const int> rank_names = {});

// Like agree_on_problems, but what every rank must share is a setting in words (a
// domain, an operator's configuration): a hash of `setting` is agreed, and if it differs
// every rank throws a ValueError showing each distinct setting and its ranks. A rank's
// problem takes precedence (its setting may be half resolved). Runs the same collectives
// as agree_on_problems, so ranks that reached one and the other still meet.
// `rank_names` as for agree_on_problems.
void agree_on_setting(MPI_Comm comm, const std::optional<Problem>& local, const std::string& setting,
                      const char* setting_name, std::span<const int> rank_names = {});

}  // namespace hybridfd
