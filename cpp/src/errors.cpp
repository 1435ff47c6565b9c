#include "hybridfd/errors.hpp"

#include <map>
#include <sstream>
#include <vector>

namespace hybridfd {
namespace {

// "rank 3" or "ranks 0-2, 5"
std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream text;
  text << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    text << (i ? ", " : "") << ranks[i];
    if (j > i) text << '-' << ranks[j];
    i = j + 1;
  }
  return text.str();
}

}  // namespace

void agree_on_problems(MPI_Comm comm, const std::optional<Problem>& local, std::int64_t agreed_value,
                       const char* agreed_value_name) {
  const std::int64_t mine[3] = {local ? static_cast<std::int64_t>(local->kind) : 0, agreed_value, -agreed_value};
  std::int64_t worst[3];
  MPI_Allreduce(mine, worst, 3, MPI_INT64_T, MPI_MAX, comm);
  const bool value_differs = worst[1] != -worst[2];
  if (worst[0] == 0 && !value_differs) return;

  // Error path only: collect every rank's message so each rank can say what went wrong
  // anywhere, not just "some other rank failed".
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::string message = local ? local->message : std::string();
  if (value_differs) {
    std::vector<std::int64_t> values(size);
    MPI_Allgather(&agreed_value, 1, MPI_INT64_T, values.data(), 1, MPI_INT64_T, comm);
    std::ostringstream text;
    text << "the " << (agreed_value_name ? agreed_value_name : "value") << " must be the same on every rank, got";
    for (int rank = 0; rank < size; ++rank) text << (rank ? ", " : " ") << values[rank] << " on rank " << rank;
    if (!message.empty()) message += "; ";
    message += text.str();
  }
  const int length = static_cast<int>(message.size());
  std::vector<int> lengths(size), offsets(size + 1, 0);
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
  for (int rank = 0; rank < size; ++rank) offsets[rank + 1] = offsets[rank] + lengths[rank];
  std::string all(static_cast<std::size_t>(offsets[size]), '\0');
  MPI_Allgatherv(message.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm);

  // Group identical messages (in SPMD code every rank usually reports the same one).
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> ranks_of;
  for (int rank = 0; rank < size; ++rank) {
    std::string text = all.substr(offsets[rank], lengths[rank]);
    if (text.empty()) continue;
    if (!ranks_of.count(text)) order.push_back(text);
    ranks_of[text].push_back(rank);
  }
  std::ostringstream text;
  for (std::size_t i = 0; i < order.size(); ++i)
    text << (i ? "; " : "") << rank_list(ranks_of[order[i]]) << ": " << order[i];
  if (worst[0] == static_cast<std::int64_t>(ProblemKind::type)) throw TypeError(text.str());
  throw ValueError(text.str());
}

}  // namespace hybridfd
