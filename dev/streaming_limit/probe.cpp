// Where the kernel's from-memory rate is bound (the kernel aims at 85 % of STREAM Copy),
// measured by three loops beside the library's kernel on the same bytes, in interleaved
// rounds (dev/streaming_limit.py builds and runs this file):
//
// - copy: STREAM Copy (stream_copy of cpp/probes), the reference;
// - one_stream: a 13-point symmetric stencil whose neighbours all come from the one
//   stream it reads (lanes +-1, +-2 by lane shifts, 1 .. 4 vectors away held in
//   registers): the kernel's arithmetic per point (7 multiplies, 12 adds, 4 lane
//   shifts) and its bytes (one read, one streamed write), without its neighbour rows;
// - rows_one_plane: the Laplacian on the padded grids in row order, one plane at a time:
//   the same arithmetic plus the x-neighbour rows (four planes, in the L2) and the
//   y-neighbour rows (in the L1), each plane prefetched a plane ahead, the output
//   streamed as the library streams it; checked bit for bit against the library's;
// - library: hybridfd::apply_stencil on the padded grids, as apply_padded calls it;
// - planes_P: rows_one_plane over P x-planes at a time, the next step's planes
//   prefetched and rows in bands for half the L2, as the kernel's streamed_planes.hpp
//   does; planes_3_whole_planes without bands, planes_3_no_prefetch without prefetches.
//
// Every loop runs on the build's widest vectors (wide_vector.hpp: 8 lanes with AVX-512,
// 4 with AVX2). float64, radius 2. Prints one JSON line: each loop's median rate over the
// rounds.
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hybridfd/caches.hpp"
#include "hybridfd/kernel.hpp"
#include "kernel/wide_vector.hpp"
#include "probes.hpp"

#if !defined(HYBRIDFD_WIDE_VECTOR)
#error "the probe's loops need AVX2 or AVX-512 (build on a CPU with one, -march=native)"
#endif

using namespace hybridfd;

namespace {

using wide::lanes;
using wide::load;
using wide::Vector;

struct Options {
  std::int64_t n = 96;
  int grids = 32, rounds = 7;
  bool huge_pages = false;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr, "%s\nusage: probe [--n N (a multiple of 24)] [--grids G] [--rounds K] [--huge-pages]\n",
               problem.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    auto value = [&]() -> long {
      if (i + 1 >= argc) usage("missing value after " + std::string(flag));
      return std::atol(argv[++i]);
    };
    if (flag == "--n")
      o.n = value();
    else if (flag == "--grids")
      o.grids = static_cast<int>(value());
    else if (flag == "--rounds")
      o.rounds = static_cast<int>(value());
    else if (flag == "--huge-pages")
      o.huge_pages = true;
    else
      usage("unknown option " + std::string(flag));
  }
  // A multiple of 24: whole vectors per row, and whole steps of 2, 3 and 4 planes.
  if (o.n < 24 || o.n % 24 != 0) usage("--n must be a multiple of 24, at least 24, got " + std::to_string(o.n));
  if (o.grids < 1 || o.rounds < 1) usage("--grids and --rounds must be positive");
  return o;
}

// 64-byte aligned lanes, in whole 2 MiB pages; with huge_pages madvised as numpy does
// for arrays from 4 MiB (the Python benchmarks' arrays get huge pages this way).
double* allocate(std::int64_t count, bool huge_pages) {
  constexpr std::int64_t page = std::int64_t{2} << 20;
  const std::int64_t bytes = (count * 8 + page - 1) / page * page;
  auto* data = static_cast<double*>(std::aligned_alloc(page, static_cast<std::size_t>(bytes)));
  if (data == nullptr) usage("out of memory");
  if (huge_pages) madvise(data, static_cast<std::size_t>(bytes), MADV_HUGEPAGE);
  return data;
}

using wide::align;

struct Weights {
  // The Laplacian's coefficients at unit spacing, the same on every axis: centre,
  // distance 1, distance 2.
  Vector centre, near, far;
  explicit Weights(const Stencil& s)
      : centre(Vector{} + s.centre), near(Vector{} + s.minus[0][0]), far(Vector{} + s.minus[0][1]) {}
};

// The one-stream stencil over `count` lanes (from lane 4 vectors in to 5 vectors from the
// end: the window's reach): window[j] holds the vector at lane i + lanes (j - 4).
void one_stream(const Weights& shared, const double* source, double* target, std::int64_t count) {
  const Weights w = shared;
  Vector window[9];
  for (int j = 0; j < 8; ++j) window[j] = load(source + j * lanes);
  for (std::int64_t i = 4 * lanes; i + 5 * lanes <= count; i += lanes) {
    window[8] = load(source + i + 4 * lanes);
    Vector sum = w.centre * window[4];
    sum = sum + w.near * (window[3] + window[5]);
    sum = sum + w.far * (window[2] + window[6]);
    sum = sum + w.near * (window[1] + window[7]);
    sum = sum + w.far * (window[0] + window[8]);
    sum = sum + w.near * (align<lanes - 1>(window[4], window[3]) + align<1>(window[5], window[4]));
    sum = sum + w.far * (align<lanes - 2>(window[4], window[3]) + align<2>(window[5], window[4]));
    wide::stream_aligned(target + i, sum);
    for (int j = 0; j < 8; ++j) window[j] = window[j + 1];
  }
}

// The Laplacian on one padded grid (n + 4)^3 into its n^3 output, row by row, a vector at
// a time, in the documented order (centre, x pairs, y pairs, z pairs; c * (lower + upper)).
void rows_one_plane(const Weights& shared, const double* padded, double* out, std::int64_t n) {
  const Weights w = shared;  // in registers: through the reference, reloaded after every store
  const std::int64_t row = n + 4, plane = row * row;
  const std::int64_t plane_lines = plane * 8 / 64, vectors = n * n / lanes;
  for (std::int64_t x = 0; x < n; ++x) {
    // The plane this step reads first from memory is x + 4 (padded); the next one is
    // prefetched, every line, spread evenly over the step's vectors (in bursts, a row's
    // share at once, the loop ran 0.6-0.7x as fast).
    const char* ahead = reinterpret_cast<const char*>(padded + (x + 5) * plane);
    const std::int64_t ahead_lines = x + 5 < n + 4 ? plane_lines : 0;
    std::int64_t prefetched = 0, vector = 0;
    for (std::int64_t y = 0; y < n; ++y) {
      const double* centre = padded + (x + 2) * plane + (y + 2) * row + 2;
      double* target = out + (x * n + y) * n;
      Vector below = load(centre - lanes), here = load(centre);
      for (std::int64_t k = 0; k < n; k += lanes, ++vector) {
        for (const std::int64_t due = ahead_lines * (vector + 1) / vectors; prefetched < due; ++prefetched)
          __builtin_prefetch(ahead + prefetched * 64, 0, 3);
        const double* at = centre + k;
        const Vector above = load(at + lanes);
        Vector sum = w.centre * here;
        sum = sum + w.near * (load(at - plane) + load(at + plane));
        sum = sum + w.far * (load(at - 2 * plane) + load(at + 2 * plane));
        sum = sum + w.near * (load(at - row) + load(at + row));
        sum = sum + w.far * (load(at - 2 * row) + load(at + 2 * row));
        sum = sum + w.near * (align<lanes - 1>(here, below) + align<1>(above, here));
        sum = sum + w.far * (align<lanes - 2>(here, below) + align<2>(above, here));
        wide::stream_aligned(target + k, sum);
        below = here, here = above;
      }
    }
  }
}

// The Laplacian on one padded grid, P x-planes at a time along their rows (the kernel's
// streamed_planes.hpp): planes x - 2 .. x + P + 1 at each row and lane, the P centres
// each other's x-neighbours, so each plane is read once from memory and 4 / P times
// from the cache. With Prefetch, the next step's P new planes are prefetched line by
// line, spread evenly over the step; with `budget_bytes`, rows are taken in bands whose
// 2P + 4 planes fit it (0: whole planes).
template <int P, bool Prefetch>
void planes_at_once(const Weights& shared, const double* padded, double* out, std::int64_t n,
                    std::int64_t budget_bytes) {
  const Weights w = shared;
  const std::int64_t row = n + 4, plane = row * row, row_bytes = row * 8;
  const std::int64_t band =
      budget_bytes == 0 ? n : std::max<std::int64_t>(4, budget_bytes / ((4 + 2 * P) * row_bytes) - 4);
  for (std::int64_t y0 = 0; y0 < n; y0 += band) {
    const std::int64_t y1 = std::min(n, y0 + band);
    // A step reads padded rows y0 .. y1 + 3 of each plane: one run.
    const std::int64_t run_lines = ((y1 - y0 + 4) * row_bytes + 63) / 64;
    const std::int64_t vectors = (y1 - y0) * n / lanes;
    for (std::int64_t x = 0; x < n; x += P) {
      const char* ahead = reinterpret_cast<const char*>(padded + (x + P + 4) * plane + y0 * row);
      const std::int64_t ahead_lines = x + 2 * P + 4 <= n + 4 ? P * run_lines : 0;
      std::int64_t prefetched = 0, vector = 0;
      for (std::int64_t y = y0; y < y1; ++y) {
        const double* centre = padded + (x + 2) * plane + (y + 2) * row + 2;
        double* target = out + (x * n + y) * n;
        Vector below[P], here[P];
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) below[p] = load(centre + p * plane - lanes), here[p] = load(centre + p * plane);
        for (std::int64_t k = 0; k < n; k += lanes, ++vector) {
          if constexpr (Prefetch)
            for (const std::int64_t due = ahead_lines * (vector + 1) / vectors; prefetched < due; ++prefetched)
              __builtin_prefetch(ahead + prefetched / run_lines * plane * 8 + prefetched % run_lines * 64, 0, 3);
          const double* at = centre + k;
          Vector along[P + 4];  // planes x - 2 .. x + P + 1
          along[0] = load(at - 2 * plane);
          along[1] = load(at - plane);
          along[P + 2] = load(at + P * plane);
          along[P + 3] = load(at + (P + 1) * plane);
#pragma GCC unroll 8
          for (int p = 0; p < P; ++p) along[p + 2] = here[p];
#pragma GCC unroll 8
          for (int p = 0; p < P; ++p) {
            const double* c = at + p * plane;
            const Vector above = load(c + lanes);
            Vector sum = w.centre * here[p];
            sum = sum + w.near * (along[p + 1] + along[p + 3]);
            sum = sum + w.far * (along[p] + along[p + 4]);
            sum = sum + w.near * (load(c - row) + load(c + row));
            sum = sum + w.far * (load(c - 2 * row) + load(c + 2 * row));
            sum = sum + w.near * (align<lanes - 1>(here[p], below[p]) + align<1>(above, here[p]));
            sum = sum + w.far * (align<lanes - 2>(here[p], below[p]) + align<2>(above, here[p]));
            wide::stream_aligned(target + p * n * n + k, sum);
            below[p] = here[p], here[p] = above;
          }
        }
      }
    }
  }
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::int64_t n = o.n, padded_lanes = (n + 4) * (n + 4) * (n + 4), points = n * n * n;
  const std::int64_t all_points = points * o.grids;
  const Stencil stencil = Stencil::laplace(2, {1.0, 1.0, 1.0});
  const Weights weights(stencil);
  const HaloPlan plan({n, n, n}, 2, 1);
  const Region whole{{0, 0, 0}, {n, n, n}};
  double* source = allocate(all_points, o.huge_pages);
  double* target = allocate(all_points, o.huge_pages);
  std::vector<double*> padded, library_out, rows_out;
  for (int g = 0; g < o.grids; ++g) {
    padded.push_back(allocate(padded_lanes, o.huge_pages));
    library_out.push_back(allocate(points, o.huge_pages));
    rows_out.push_back(allocate(points, o.huge_pages));
    for (std::int64_t i = 0; i < padded_lanes; ++i) padded[g][i] = static_cast<double>((i * 7919 + g) % 1013) / 1013;
    std::memset(library_out[g], 0, static_cast<std::size_t>(points) * 8);
    std::memset(rows_out[g], 0, static_cast<std::size_t>(points) * 8);
  }
  for (std::int64_t i = 0; i < all_points; ++i) source[i] = static_cast<double>(i % 1013), target[i] = 0.0;

  auto library = [&] {
    for (int g = 0; g < o.grids; ++g) apply_stencil(stencil, plan, padded[g], whole, library_out[g]);
  };
  auto rows = [&] {
    for (int g = 0; g < o.grids; ++g) rows_one_plane(weights, padded[g], rows_out[g], n);
    _mm_sfence();
  };
  auto stream = [&] {
    one_stream(weights, source, target, all_points);
    _mm_sfence();
  };
  auto copy = [&] { stream_copy(source, target, all_points); };
  struct Loop {
    const char* name;
    std::function<void()> run;
    std::vector<double> seconds;
  };
  std::vector<Loop> loops;
  loops.push_back({"copy", copy, {}});
  loops.push_back({"one_stream", stream, {}});
  loops.push_back({"rows_one_plane", rows, {}});
  loops.push_back({"library", library, {}});
  // The P-plane loops, each with outputs of its own (checked against the library's).
  const std::int64_t half_level2 = cache_sizes().level2 / 2;  // as the kernel sizes its bands
  std::vector<std::vector<double*>> planes_out;
  planes_out.reserve(8);
  auto add = [&](const char* name, auto kernel, std::int64_t budget_bytes) {
    std::vector<double*>& outs = planes_out.emplace_back();
    for (int g = 0; g < o.grids; ++g) outs.push_back(allocate(points, o.huge_pages));
    loops.push_back({name,
                     [&, kernel, budget_bytes] {
                       for (int g = 0; g < o.grids; ++g) kernel(weights, padded[g], outs[g], n, budget_bytes);
                       _mm_sfence();
                     },
                     {}});
  };
  add("planes_2", planes_at_once<2, true>, half_level2);
  add("planes_3", planes_at_once<3, true>, half_level2);
  add("planes_4", planes_at_once<4, true>, half_level2);
  add("planes_3_whole_planes", planes_at_once<3, true>, 0);
  add("planes_3_no_prefetch", planes_at_once<3, false>, half_level2);
  for (auto& loop : loops) loop.run();  // first touch of every page
  for (int round = 0; round < o.rounds; ++round)
    for (auto& loop : loops) {
      const double start = now();
      loop.run();
      loop.seconds.push_back(now() - start);
    }
  bool identical = true;
  for (int g = 0; g < o.grids; ++g)
    identical = identical && std::memcmp(library_out[g], rows_out[g], static_cast<std::size_t>(points) * 8) == 0;
  for (auto& outs : planes_out)
    for (int g = 0; g < o.grids; ++g)
      identical = identical && std::memcmp(library_out[g], outs[g], static_cast<std::size_t>(points) * 8) == 0;
  std::printf("{\"n\": %ld, \"grids\": %d, \"huge_pages\": %s, \"bit_identical\": %s", static_cast<long>(n), o.grids,
              o.huge_pages ? "true" : "false", identical ? "true" : "false");
  for (auto& loop : loops) {
    std::sort(loop.seconds.begin(), loop.seconds.end());
    const double median = loop.seconds[loop.seconds.size() / 2];
    std::printf(", \"%s\": %.1f", loop.name, static_cast<double>(all_points) / median / 1e6);
  }
  std::printf("}\n");
  return identical ? 0 : 1;
}
