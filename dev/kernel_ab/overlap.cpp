// Does this machine overlap memory traffic with arithmetic? A STREAM-like copy that does R
// rounds of register-only arithmetic on each vector (8 operations a round, no extra loads),
// timed on 32 KB (in cache) and on 256 MB arrays (from memory), ns per point. Where the
// memory time hides behind the arithmetic, the two columns meet. Build and run:
//   c++ -std=c++20 -O3 -march=native -ffp-contract=off dev/kernel_ab/overlap.cpp -o overlap
//   flock /tmp/hybridfd-measure.lock chrt -f 40 taskset -c 0 ./overlap
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
using V = double __attribute__((vector_size(32)));
template <int R>
__attribute__((noinline)) void kernel(const double* a, double* b, long n, V c) {
  for (long i = 0; i < n; i += 4) {
    V x;
    std::memcpy(&x, a + i, 32);
    V y0 = x * c, y1 = x + c, y2 = x - c, y3 = x * x;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      y0 = y0 + y1 * c;
      y1 = y1 + y2 * c;
      y2 = y2 + y3 * c;
      y3 = y3 + y0 * c;
    }
    V s = R ? (y0 + y1) + (y2 + y3) : x;
    std::memcpy(b + i, &s, 32);
  }
}
template <int R>
double time_it(const double* a, double* b, long n, int reps) {
  V c = {0.5, 0.5, 0.5, 0.5};
  double best = 1e300;
  for (int k = 0; k < 7; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) kernel<R>(a, b, n, c);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  return best / n * 1e9;  // ns per point
}
int main() {
  const long big = 32L << 20, small = 4096;  // 256 MB per array; 32 KB
  std::vector<double> A(big + 8, 1.0), B(big + 8, 0.0);
  double* a = A.data() + 2;
  double* b = B.data() + 2;
  std::printf("R  cache ns/pt  memory ns/pt  (memory - cache)\n");
  auto row = [&](int R, double tc, double tm) { std::printf("%d  %.3f  %.3f  %.3f\n", R, tc, tm, tm - tc); };
  row(0, time_it<0>(a, b, small, 20000), time_it<0>(a, b, big, 2));
  row(1, time_it<1>(a, b, small, 20000), time_it<1>(a, b, big, 2));
  row(2, time_it<2>(a, b, small, 20000), time_it<2>(a, b, big, 2));
  row(3, time_it<3>(a, b, small, 20000), time_it<3>(a, b, big, 2));
  row(4, time_it<4>(a, b, small, 20000), time_it<4>(a, b, big, 2));
  row(6, time_it<6>(a, b, small, 20000), time_it<6>(a, b, big, 2));
}
