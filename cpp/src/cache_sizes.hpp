// The core's cache sizes, which the kernel's blocking is sized by: glibc's, read from the
// CPU, with a typical size where it cannot tell; the last level's share from Linux.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

// Internal linkage, as column_sweep.hpp says why: each including file its own copy.
namespace hybridfd {
namespace {

inline std::int64_t cache_bytes([[maybe_unused]] int name, std::int64_t fallback) {
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
  if (const long size = sysconf(name); size > 0) return static_cast<std::int64_t>(size);
#endif
  return fallback;
}

#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
inline constexpr int level1_name = _SC_LEVEL1_DCACHE_SIZE, level2_name = _SC_LEVEL2_CACHE_SIZE;
#else
inline constexpr int level1_name = 0, level2_name = 0;
#endif

// The L1 data cache of one core (32 KiB where the CPU does not tell).
inline std::int64_t level1_cache_bytes() {
  static const std::int64_t bytes = cache_bytes(level1_name, std::int64_t{32} << 10);
  return bytes;
}

// The L2 of one core (1 MiB where the CPU does not tell).
inline std::int64_t level2_cache_bytes() {
  static const std::int64_t bytes = cache_bytes(level2_name, std::int64_t{1} << 20);
  return bytes;
}

// The number of CPUs in a Linux cpulist such as "0-7,64-71"; 0 if it does not parse.
inline std::int64_t cpus_in_list(const std::string& list) {
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

// One CPU's share of the last-level cache: its size over the CPUs that share it, as
// Linux lists them (/sys/devices/system/cpu/cpu0/cache). glibc's sysconf is no help
// here: on this VM it reports 384 MiB, the whole socket's L3, where cpu0's L3 is 32 MiB
// shared by two CPUs. 2 MiB where Linux does not tell.
inline std::int64_t last_level_share_bytes() {
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

}  // namespace
}  // namespace hybridfd
