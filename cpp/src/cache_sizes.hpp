// The core's cache sizes, which the kernel's blocking is sized by: glibc's, read from the
// CPU, with a typical size where it cannot tell.
#pragma once

#include <unistd.h>

#include <cstdint>

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

}  // namespace

// One CPU's share of the last-level cache (2 MiB where Linux does not tell; caches.cpp).
std::int64_t last_level_share_bytes();

}  // namespace hybridfd
