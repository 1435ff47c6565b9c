// The caches of the core a thread runs on, as the kernel sizes its blocking and its
// padded default by them, so that a caller (a benchmark, or code choosing the kernel's
// `from_memory` itself) can say where its grids live.
#pragma once

#include <cstdint>

namespace hybridfd {

// One core's caches in bytes: the L1 data cache, the L2, and the core's share of the
// last-level cache (its size over the CPUs sharing it).
struct CacheSizes {
  std::int64_t level1_data;
  std::int64_t level2;
  std::int64_t last_level_share;
};
CacheSizes cache_sizes();

}  // namespace hybridfd
