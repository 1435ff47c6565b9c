// Benchmark probes, built into their own module (hybridfd._probes) beside the library:
// hardware references measured in the same run as a benchmark, so a kernel's numbers can
// be judged against what this core delivers now (a VM's vCPU may deliver far less than
// the data sheet): the arithmetic peak, the issue rate, STREAM's Copy, and the kernel
// and the copy timed in C++.
#pragma once

#include <cstdint>
#include <optional>

#include "hybridfd/array_ref.hpp"
#include "hybridfd/stencil.hpp"

namespace hybridfd {

struct ArithmeticPeak {
  double multiply_add_gflops;  // separate multiplies and adds, as the kernel does
  double fma_gflops;           // fused multiply-adds (2 flops each)
};

// Runs each loop for about `seconds` on the calling thread (the best of ten windows).
// fma_gflops is 0 in a build without FMA instructions.
ArithmeticPeak measure_arithmetic_peak(double seconds = 0.2);

// Instructions per nanosecond the calling thread issues over about `seconds` (the
// median of five windows, not the best) in a loop of independent register-only adds,
// which a core running this thread alone issues at its full width. About half that rate
// means another hardware thread shares the core (SMT: on a VM, another tenant's vCPU
// may), which slows every loop that needs more than half the core's issue width (the
// kernel in cache: about 33 instructions per four float64 points) while the arithmetic
// peaks above, which need less, do not move. Benchmarks record it beside their timings
// to say which state the core was in.
double measure_issue_rate(double seconds = 0.01);

// STREAM's Copy kernel, c[j] = a[j], on `count` float64 values: a plain loop with
// ordinary stores, as STREAM compiles it (not memcpy, whose large-size paths switch to
// non-temporal stores at size thresholds of the C library's choosing). On `threads`
// threads (a ThreadTeam; throws ValueError naming a count it cannot have) each copies
// one contiguous part at once, as STREAM's OpenMP loop does: what the memory bus gives
// that many cores, set beside a kernel split over as many threads.
void stream_copy(const double* source, double* target, std::int64_t count, int threads = 1);

// Seconds one copy of `count` values by stream_copy takes, timed in C++ like
// kernel_seconds: the copy of a grid small enough to live in cache runs at that cache's
// rate, so a kernel's size curve has beside it what each cache level moves now.
double copy_seconds(const double* source, double* target, std::int64_t count, double seconds = 0.2, int threads = 1);

// Seconds one application of the kernel to the whole of `padded` takes, split over
// `threads` threads by x-slabs, from memory or not as `from_memory` says (as
// apply_stencil_to_padded, whose checked call comes first). Timed in C++, so that grids
// small enough to live in cache (16^3: a few microseconds) are not drowned by the cost
// of a call from Python: the fastest of ten windows of about `seconds` / 10 each, each
// window's time divided by its applications.
double kernel_seconds(const Stencil& stencil, const ArrayRef& padded, const ArrayRef& out, double seconds = 0.2,
                      int threads = 1, std::optional<bool> from_memory = std::nullopt);

}  // namespace hybridfd
