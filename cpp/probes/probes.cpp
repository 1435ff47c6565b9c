// Hardware references for the kernel benchmarks: the core's arithmetic peak, its issue
// rate and STREAM's Copy, measured in the same run as the kernel.
#include "probes.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "format.hpp"
#include "hybridfd/errors.hpp"
#include "hybridfd/kernel.hpp"
#include "hybridfd/thread_team.hpp"

#if defined(__FMA__)
#include <immintrin.h>
#endif

namespace hybridfd {
namespace {

// The widest vector the build can keep in one register: 512 bits with AVX-512 (Zen 5
// and recent Xeons execute them whole, at twice the 256-bit rate; Zen 4 splits them,
// at the same rate), 256 bits with AVX, else SSE2's 128. The peak is the core's, not
// that of the vectors the kernel happens to use.
#if defined(__AVX512F__)
using PeakVector = double __attribute__((vector_size(64)));
#elif defined(__AVX__)
using PeakVector = double __attribute__((vector_size(32)));
#else
using PeakVector = double __attribute__((vector_size(16)));
#endif
constexpr int peak_lanes = sizeof(PeakVector) / sizeof(double);

// Pins each value to a register at this point, so the compiler can neither drop nor
// merge the chains. The values must stay in registers: a chain kept in memory runs at
// the store-to-load latency, not the arithmetic rate, and would report about half the
// peak.
template <class Value>
inline void keep_in_register(Value& value) {
  asm volatile("" : "+x"(value));
}
template <class... Values>
inline void keep_in_registers(Values&... values) {
  (keep_in_register(values), ...);
}

using Clock = std::chrono::steady_clock;
constexpr int steps_per_check = 4096;

// Seven multiply chains and seven add chains, all independent: with latency 3-4 and two
// pipes of each kind (Zen 3, Skylake), 6-8 chains of a kind keep its pipes busy, and
// 7 + 7 + 2 constants fill the 16 vector registers without spilling.
double multiply_add_rate(double seconds) {
  const PeakVector factor = PeakVector{} + 1.0000001, term = PeakVector{} + 1e-9;
  PeakVector m0 = PeakVector{} + 1.0, m1 = m0 + 0.1, m2 = m0 + 0.2, m3 = m0 + 0.3, m4 = m0 + 0.4, m5 = m0 + 0.5,
             m6 = m0 + 0.6;
  PeakVector a0 = PeakVector{}, a1 = a0 + 1.0, a2 = a0 + 2.0, a3 = a0 + 3.0, a4 = a0 + 4.0, a5 = a0 + 5.0,
             a6 = a0 + 6.0;
  long steps = 0;
  const auto start = Clock::now();
  double elapsed = 0.0;
  while (elapsed < seconds) {
    for (int step = 0; step < steps_per_check; ++step) {
      m0 = m0 * factor, m1 = m1 * factor, m2 = m2 * factor, m3 = m3 * factor;
      m4 = m4 * factor, m5 = m5 * factor, m6 = m6 * factor;
      a0 = a0 + term, a1 = a1 + term, a2 = a2 + term, a3 = a3 + term;
      a4 = a4 + term, a5 = a5 + term, a6 = a6 + term;
      keep_in_registers(m0, m1, m2, m3, m4, m5, m6, a0, a1, a2, a3, a4, a5, a6);
    }
    steps += steps_per_check;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return static_cast<double>(steps) * 14 * peak_lanes / elapsed / 1e9;
}

// Ten independent fused multiply-add chains (latency 4-5, two pipes), on the widest
// vectors (PeakVector). 0 where the build has no FMA instructions (-DHYBRIDFD_NATIVE=OFF,
// or a CPU without them).
double fused_rate(double seconds) {
#if defined(__FMA__) && defined(__AVX__)
#if defined(__AVX512F__)
  using Native = __m512d;
  auto fused = [](Native a, Native b, Native c) { return _mm512_fmadd_pd(a, b, c); };
#else
  using Native = __m256d;
  auto fused = [](Native a, Native b, Native c) { return _mm256_fmadd_pd(a, b, c); };
#endif
  static_assert(sizeof(Native) == sizeof(PeakVector));
  auto broadcast = [](double value) {
    const PeakVector vector = PeakVector{} + value;
    Native native;
    std::memcpy(&native, &vector, sizeof native);
    return native;
  };
  const Native factor = broadcast(1.0000001), term = broadcast(1e-9);
  Native v0 = broadcast(1.0), v1 = broadcast(1.1), v2 = broadcast(1.2), v3 = broadcast(1.3), v4 = broadcast(1.4),
         v5 = broadcast(1.5), v6 = broadcast(1.6), v7 = broadcast(1.7), v8 = broadcast(1.8), v9 = broadcast(1.9);
  long steps = 0;
  const auto start = Clock::now();
  double elapsed = 0.0;
  while (elapsed < seconds) {
    for (int step = 0; step < steps_per_check; ++step) {
      v0 = fused(v0, factor, term), v1 = fused(v1, factor, term), v2 = fused(v2, factor, term);
      v3 = fused(v3, factor, term), v4 = fused(v4, factor, term), v5 = fused(v5, factor, term);
      v6 = fused(v6, factor, term), v7 = fused(v7, factor, term), v8 = fused(v8, factor, term);
      v9 = fused(v9, factor, term);
      keep_in_registers(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9);
    }
    steps += steps_per_check;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return static_cast<double>(steps) * 10 * peak_lanes * 2 / elapsed / 1e9;
#else
  (void)seconds;
  return 0.0;
#endif
}

// Ten integer add chains and six vector add chains, all independent and held in
// registers (16 adds a step; twelve integer chains left the loop too few registers). A
// core that runs this thread alone issues them at its full width (Zen 3: about 5.8 of its
// 6 a cycle, the loop's own instructions included); beside a busy hardware thread on the
// same core (SMT; on a cloud VM, possibly another tenant's vCPU) the two share the front
// end and this loop gets about half. The arithmetic peaks above do not see that: ten FMA
// chains need barely two instructions a cycle.
double issue_rate_window(double seconds) {
  const PeakVector term = PeakVector{} + 1e-9;
  PeakVector v0 = PeakVector{}, v1 = v0 + 1.0, v2 = v0 + 2.0, v3 = v0 + 3.0, v4 = v0 + 4.0, v5 = v0 + 5.0;
  std::int64_t i0 = 0, i1 = 1, i2 = 2, i3 = 3, i4 = 4, i5 = 5, i6 = 6, i7 = 7, i8 = 8, i9 = 9;
  long steps = 0;
  const auto start = Clock::now();
  double elapsed = 0.0;
  while (elapsed < seconds) {
    for (int step = 0; step < steps_per_check; ++step) {
      v0 = v0 + term, v1 = v1 + term, v2 = v2 + term;
      i0 += 1, i1 += 1, i2 += 1, i3 += 1, i4 += 1;
      v3 = v3 + term, v4 = v4 + term, v5 = v5 + term;
      i5 += 1, i6 += 1, i7 += 1, i8 += 1, i9 += 1;
      keep_in_registers(v0, v1, v2, v3, v4, v5);
      asm volatile("" : "+r"(i0), "+r"(i1), "+r"(i2), "+r"(i3), "+r"(i4));
      asm volatile("" : "+r"(i5), "+r"(i6), "+r"(i7), "+r"(i8), "+r"(i9));
    }
    steps += steps_per_check;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return static_cast<double>(steps) * 16 / elapsed / 1e9;
}

// The best of ten short windows: other processes on the core only ever slow a window
// down, and the peak is what an undisturbed window reaches.
template <class Rate>
double best_window(Rate rate, double seconds) {
  double best = 0.0;
  for (int window = 0; window < 10; ++window) best = std::max(best, rate(seconds / 10));
  return best;
}

void check_seconds(double seconds) {
  if (!(seconds > 0.0 && seconds <= 3600.0))
    throw ValueError(detail::concat("seconds ", seconds, " to time for must lie in (0, 3600]"));
}

// Seconds per call of `run`: the fastest of ten windows of about `seconds` / 10, each
// window's time divided by its calls (at least one).
template <class Run>
double fastest_window_seconds(Run run, double seconds) {
  double best = 0.0;
  for (int window = 0; window < 10; ++window) {
    long calls = 0;
    const auto start = Clock::now();
    double elapsed = 0.0;
    do {
      run();
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < seconds / 10);
    const double per_call = elapsed / static_cast<double>(calls);
    best = window == 0 ? per_call : std::min(best, per_call);
  }
  return best;
}

// A loop the compiler would turn into a memcpy call is written with explicit vectors.
void copy_values(const double* source, double* target, std::int64_t count) {
  using Vector = double __attribute__((vector_size(32)));
  std::int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    Vector value;
    std::memcpy(&value, source + i, sizeof value);
    std::memcpy(target + i, &value, sizeof value);
  }
  for (; i < count; ++i) target[i] = source[i];
}

// Each thread of the team copies one contiguous part (one thread: all of it). Parts meet
// at multiples of 8 values, so on a target that starts a 64-byte line no line is written
// by two cores.
void copy_in_parts(const double* source, double* target, std::int64_t count, const ThreadTeam& team) {
  constexpr std::int64_t line_values = 8;
  const std::int64_t threads = team.size();
  auto part = [&](int thread) {
    const auto boundary = [&](std::int64_t index) {
      return index == threads ? count : count * index / threads / line_values * line_values;
    };
    const std::int64_t begin = boundary(thread), end = boundary(thread + 1);
    copy_values(source + begin, target + begin, end - begin);
  };
  team.run(part);
}

}  // namespace

void stream_copy(const double* source, double* target, std::int64_t count, int threads) {
  copy_in_parts(source, target, count, ThreadTeam(threads));
}

double copy_seconds(const double* source, double* target, std::int64_t count, double seconds, int threads) {
  check_seconds(seconds);
  const ThreadTeam team(threads);
  copy_in_parts(source, target, count, team);  // first touch of every page
  return fastest_window_seconds([&] { copy_in_parts(source, target, count, team); }, seconds);
}

double kernel_seconds(const Stencil& stencil, const ArrayRef& padded, const ArrayRef& out, double seconds, int threads,
                      std::optional<bool> from_memory) {
  check_seconds(seconds);
  apply_stencil_to_padded(stencil, padded, out, std::nullopt, threads, from_memory);  // checks; warms the caches
  // Then the kernel alone, as the schedules call it on their own buffers: no checks per
  // application, so a 16^3 grid's few microseconds are the kernel's (and the team's).
  const Index3 extent{out.shape[0], out.shape[1], out.shape[2]};
  const HaloPlan plan(extent, stencil.radius, lanes_per_point(scalar_type_from_name(padded.dtype)));
  const Region whole{{0, 0, 0}, extent};
  const BoxInput input = padded_input(plan, static_cast<const double*>(padded.data));
  auto* output = static_cast<double*>(const_cast<void*>(out.data));
  const bool told_from_memory = from_memory.value_or(padded_grid_from_memory(plan));
  const ThreadTeam team(threads);
  return fastest_window_seconds(
      [&] { apply_stencil_in_slabs(stencil, plan, input, whole, output, told_from_memory, team); }, seconds);
}

double measure_issue_rate(double seconds) {
  check_seconds(seconds);
  // The median of five windows: the hypervisor takes the vCPU away for a few
  // milliseconds every second or so, which would make a single window read "shared".
  double windows[5];
  for (double& window : windows) window = issue_rate_window(seconds / 5);
  std::nth_element(windows, windows + 2, windows + 5);
  return windows[2];
}

ArithmeticPeak measure_arithmetic_peak(double seconds) {
  check_seconds(seconds);
  return {best_window(multiply_add_rate, seconds), best_window(fused_rate, seconds)};
}

}  // namespace hybridfd
