// Registry: a name -> entry table that rejects unknown names with the list of known
// ones. Transports, schedules and approaches are each one of these (private to the core).
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format.hpp"
#include "hybridfd/errors.hpp"

namespace hybridfd::detail {

template <class Entry>
class Registry {
 public:
  Registry(const char* kind, std::initializer_list<std::pair<const std::string, Entry>> entries)
      : kind_(kind), entries_(entries) {}

  // Throws ValueError naming the unknown name and listing the known ones.
  const Entry& at(std::string_view name) const {
    const auto found = entries_.find(name);
    if (found == entries_.end()) {
      std::string known;
      for (const auto& entry : entries_) known += (known.empty() ? "" : ", ") + entry.first;
      throw ValueError(concat("unknown ", kind_, " '", name, "'; known: ", known));
    }
    return found->second;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> result;
    for (const auto& entry : entries_) result.push_back(entry.first);
    return result;
  }

 private:
  const char* kind_;
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace hybridfd::detail
