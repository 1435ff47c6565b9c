// The caches of one core: glibc's L1 and L2 (cache_sizes.hpp), and the share of the
// last-level cache read from Linux's description of cpu0's caches.
#include "hybridfd/caches.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include "cache_sizes.hpp"

namespace hybridfd {
namespace {

// The number of CPUs in a Linux cpulist such as "0-7,64-71"; 0 if it does not parse.
std::int64_t cpus_in_list(const std::string& list) {
  std::int64_t cpus = 0;
  std::istringstream ranges(list);
  for (std::string range; std::getline(ranges, range, ',');) {
    std::int64_t first = 0, last = 0;
    char dash = 0;
    std::istringstream parts(range);
    if (!(parts >> first)) return 0;
    if (parts >> dash) {
      if (dash != '-' || !(parts >> last) || last < first) return 0;
    } else {
      last = first;
    }
    cpus += last - first + 1;
  }
  return cpus;
}

}  // namespace

// One CPU's share of the last-level cache: its size over the CPUs that share it, as
// Linux lists them (/sys/devices/system/cpu/cpu0/cache). glibc's sysconf is no help
// here: on a VM it may report the whole socket's L3 (384 MiB on a host whose cpu0 has
// 32 MiB of L3 shared by two CPUs). 2 MiB where Linux does not tell.
std::int64_t last_level_share_bytes() {
  static const std::int64_t bytes = [] {
    std::int64_t share = std::int64_t{2} << 20;
    int deepest = 0;
    for (int index = 0; index < 16; ++index) {
      const std::string directory = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
      std::ifstream level_file(directory + "level"), type_file(directory + "type"), size_file(directory + "size"),
          shared_file(directory + "shared_cpu_list");
      int level = 0;
      std::string type, size_text, shared;
      if (!(level_file >> level)) break;
      if (!(type_file >> type) || type == "Instruction" || level <= deepest) continue;
      if (!(size_file >> size_text) || !(shared_file >> shared)) continue;
      std::int64_t kib = 0;
      std::istringstream size_parts(size_text);
      char unit = 0;
      if (!(size_parts >> kib >> unit) || unit != 'K' || kib <= 0) continue;
      const std::int64_t cpus = cpus_in_list(shared);
      if (cpus <= 0) continue;
      deepest = level;
      share = (kib << 10) / cpus;
    }
    return share;
  }();
  return bytes;
}

CacheSizes cache_sizes() { return {level1_cache_bytes(), level2_cache_bytes(), last_level_share_bytes()}; }

}  // namespace hybridfd
