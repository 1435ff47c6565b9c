// The core's arithmetic peak, measured by a small loop in the same run as a benchmark,
// so a kernel's GFLOP/s can be judged against what this core delivers now (a VM's vCPU
// may deliver far less than the data sheet).
#pragma once

namespace hybridfd {

struct ArithmeticPeak {
  double multiply_add_gflops;  // separate multiplies and adds, as the kernel does
  double fma_gflops;           // fused multiply-adds (2 flops each)
};

// Runs each loop for about `seconds` on the calling thread.
ArithmeticPeak measure_arithmetic_peak(double seconds = 0.2);

}  // namespace hybridfd
