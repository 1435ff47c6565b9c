#include "hybridfd/errors.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>
#include <string_view>
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

// FNV-1a, kept non-negative for the max/min reduction.
std::int64_t fingerprint_of(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return static_cast<std::int64_t>(hash >> 1);
}

// How the message names the ranks of comm: name[rank], and the ranks in ascending order
// of their names (the order they are listed in).
struct RankNames {
  std::vector<int> name;
  std::vector<int> order;
};

RankNames rank_names_of(int size, std::span<const int> given) {
  RankNames names{std::vector<int>(given.begin(), given.end()), std::vector<int>(static_cast<std::size_t>(size))};
  std::iota(names.order.begin(), names.order.end(), 0);
  if (given.empty()) {
    names.name = names.order;
    return names;
  }
  std::stable_sort(names.order.begin(), names.order.end(),
                   [&](int left, int right) { return names.name[left] < names.name[right]; });
  return names;
}

// Distinct texts in order of first appearance (ranks taken in names.order), each with the
// names of the ranks that sent it.
using Groups = std::vector<std::pair<std::string, std::vector<int>>>;
Groups group(const std::vector<std::string>& texts, const RankNames& names) {
  Groups groups;
  std::map<std::string, std::size_t> index;
  for (const int rank : names.order) {
    const std::string& text = texts[rank];
    if (text.empty()) continue;
    const auto [found, added] = index.try_emplace(text, groups.size());
    if (added) groups.push_back({text, {}});
    groups[found->second].second.push_back(names.name[rank]);
  }
  return groups;
}

// `setting` null: agree on the number `agreed_value`; else on the setting (whose
// fingerprint is `agreed_value`).
void agree(MPI_Comm comm, const std::optional<Problem>& local, std::int64_t agreed_value, const char* agreed_name,
           const std::string* setting, std::span<const int> rank_names) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  if (!rank_names.empty() && rank_names.size() != static_cast<std::size_t>(size))
    throw std::invalid_argument("agreement given " + std::to_string(rank_names.size()) +
                                " rank names for a communicator of " + std::to_string(size) + " ranks");
  const std::int64_t mine[3] = {local ? static_cast<std::int64_t>(local->kind) : 0, agreed_value, -agreed_value};
  std::int64_t worst[3];
  MPI_Allreduce(mine, worst, 3, MPI_INT64_T, MPI_MAX, comm);
  const bool value_differs = worst[1] != -worst[2];
  if (worst[0] == 0 && !value_differs) return;

  // Error path only: collect every rank's problem, and what it agreed on if that
  // differs, so each rank can say what went wrong anywhere, not just "some other rank
  // failed". The collectives are the same for a number and a setting.
  std::string mine_text = local ? local->message : std::string();
  if (value_differs) mine_text += '\0' + (setting ? *setting : std::to_string(agreed_value));
  const int length = static_cast<int>(mine_text.size());
  std::vector<int> lengths(size), offsets(size + 1, 0);
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
  for (int rank = 0; rank < size; ++rank) offsets[rank + 1] = offsets[rank] + lengths[rank];
  std::string all(static_cast<std::size_t>(offsets[size]), '\0');
  MPI_Allgatherv(mine_text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm);

  std::vector<std::string> problems(size), values(size);
  for (int rank = 0; rank < size; ++rank) {
    const std::string text = all.substr(offsets[rank], lengths[rank]);
    const auto split = text.find('\0');
    problems[rank] = text.substr(0, split);
    if (split != std::string::npos) values[rank] = text.substr(split + 1);
  }
  // Group identical messages (in SPMD code every rank usually reports the same one).
  const RankNames names = rank_names_of(size, rank_names);
  std::ostringstream text;
  for (const auto& [message, ranks] : group(problems, names))
    text << (text.tellp() > 0 ? "; " : "") << rank_list(ranks) << ": " << message;
  // A rank that agreed on no value (no name) met others agreeing on one: only their
  // problems count.
  const char* name = agreed_name;
  if (value_differs && !setting && name) {
    text << (text.tellp() > 0 ? "; " : "") << "the " << name << " must be the same on every rank, got";
    bool first = true;
    for (const int rank : names.order) {
      text << (first ? " " : ", ") << values[rank] << " on rank " << names.name[rank];
      first = false;
    }
  } else if (value_differs && worst[0] == 0) {
    text << "the " << (name ? name : "arguments") << " must be the same on every rank, got ";
    bool first = true;
    for (const auto& [value, ranks] : group(values, names)) {
      text << (first ? "" : "; ") << rank_list(ranks) << ": " << value;
      first = false;
    }
  }
  if (worst[0] == static_cast<std::int64_t>(ProblemKind::type)) throw TypeError(text.str());
  throw ValueError(text.str());
}

}  // namespace

void agree_on_problems(MPI_Comm comm, const std::optional<Problem>& local, std::int64_t agreed_value,
                       const char* agreed_value_name, std::span<const int> rank_names) {
  agree(comm, local, agreed_value, agreed_value_name, nullptr, rank_names);
}

void agree_on_setting(MPI_Comm comm, const std::optional<Problem>& local, const std::string& setting,
                      const char* setting_name, std::span<const int> rank_names) {
  agree(comm, local, fingerprint_of(setting), setting_name, &setting, rank_names);
}

}  // namespace hybridfd
