#include "hybridfd/peak.hpp"

#include <chrono>
#include <cmath>
#include <cstring>

namespace hybridfd {
namespace {

using Vector = double __attribute__((vector_size(32)));
constexpr int chains = 12;  // enough independent chains to cover latency x pipes

// Keeps a chain alive and, where the CPU has 256-bit registers, in one of them.
inline void keep(Vector& value) {
#if defined(__AVX__)
  asm volatile("" : "+x"(value));
#else
  asm volatile("" : "+m"(value));  // a build without AVX (-DHYBRIDFD_NATIVE=OFF)
#endif
}

template <bool Fused>
double gflops(double seconds) {
  Vector value[chains];
  for (int k = 0; k < chains; ++k) value[k] = Vector{1.0, 2.0, 3.0, 4.0} * (1e-3 * (k + 1));
  const Vector factor{1.0000001, 1.0000001, 1.0000001, 1.0000001};
  const Vector term{1e-9, 1e-9, 1e-9, 1e-9};
  long rounds = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0.0;
  while (elapsed < seconds) {
    for (int repeat = 0; repeat < 4096; ++repeat) {
#pragma GCC unroll 12
      for (int k = 0; k < chains; ++k) {
        if constexpr (Fused) {
          for (int lane = 0; lane < 4; ++lane) value[k][lane] = std::fma(value[k][lane], factor[lane], term[lane]);
        } else {
          value[k] = value[k] * factor + term;
        }
        keep(value[k]);
      }
    }
    rounds += 4096;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return static_cast<double>(rounds) * chains * 4 * 2 / elapsed / 1e9;
}

}  // namespace

// A loop the compiler would turn into a memcpy call is written with explicit vectors.
void stream_copy(const double* source, double* target, std::int64_t count) {
  std::int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    Vector value;
    std::memcpy(&value, source + i, sizeof value);
    std::memcpy(target + i, &value, sizeof value);
  }
  for (; i < count; ++i) target[i] = source[i];
}

ArithmeticPeak measure_arithmetic_peak(double seconds) { return {gflops<false>(seconds), gflops<true>(seconds)}; }

}  // namespace hybridfd
