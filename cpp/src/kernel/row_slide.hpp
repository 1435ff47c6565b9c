// The row slide: the stencil (GPAW journal, Sect. 2.1) on any BoxInput, every layout and
// vector width, and the sweep sweep_choice.cpp chooses wherever the wide-vector sweeps do
// not serve. Points are computed four lanes at a time with explicit vectors (gcc/clang
// vector extension, 32-byte vectors with -march=native: no reliance on the
// auto-vectoriser), sliding along each row, and each point is summed exactly in the
// order of stencil.hpp: no -ffast-math, no FMA contraction. One instantiation per radius,
// lane count, symmetry and streaming, so offsets are compile-time multiples of the
// strides. An output that streams is written with streaming (non-temporal) stores, one
// x-plane at a time, while the rows the sweep reads first are prefetched a few rows
// ahead: only the three together let the memory traffic overlap the arithmetic; streaming
// two planes at a time, or prefetching a whole x-step ahead, is slower
// (`python dev/kernel_ab.py`).
#pragma once

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "../cache_sizes.hpp"
#include "hybridfd/kernel.hpp"
#include "stencil_terms.hpp"
#include "sweep_choice.hpp"

// Internal linkage, as column_sweep.hpp says why.
namespace hybridfd {
namespace {

// Four float64 lanes as one value (gcc/clang vector extension). Its arithmetic is
// lane-wise IEEE, so a vector of points sums exactly like each point alone; loads and
// stores go through memcpy (unaligned, no aliasing questions).
using Vector = double __attribute__((vector_size(32)));
constexpr int vector_lanes = kernel::row_vector_lanes;
static_assert(sizeof(Vector) == vector_lanes * sizeof(double));

inline Vector load(const double* source) {
  Vector value;
  std::memcpy(&value, source, sizeof value);
  return value;
}

// Stores one vector of output. Streamed (Stream true), it goes around the caches in
// whole 32-byte or 16-byte pieces, whichever the address allows: an output larger than
// the L2 is not read again soon, and a plain store would first read each line from
// memory (the write-allocate read, a third of the traffic). An address not 16-byte
// aligned (a float64 view one lane into an array), or a build without AVX, takes plain
// stores.
template <bool Stream>
inline void store(double* target, Vector value) {
#if defined(__AVX__)
  if constexpr (Stream) {
    const auto address = reinterpret_cast<std::uintptr_t>(target);
    const auto whole = reinterpret_cast<__m256d>(value);
    if (address % 32 == 0) return _mm256_stream_pd(target, whole);
    if (address % 16 == 0) {
      _mm_stream_pd(target, _mm256_castpd256_pd128(whole));
      _mm_stream_pd(target + 2, _mm256_extractf128_pd(whole, 1));
      return;
    }
  }
#endif
  std::memcpy(target, &value, sizeof value);
}

template <class T>
inline T read(const double* source) {
  if constexpr (std::is_same_v<T, Vector>)
    return load(source);
  else
    return *source;
}

// Both forms of the coefficients a row needs.
template <int Radius>
struct RowCoefficients {
  Coefficients<Radius, double> one;
  Coefficients<Radius, Vector> four;
  explicit RowCoefficients(const Stencil& stencil) : one(stencil), four(stencil) {}
};

// The rows one output row reads (or two output rows, of consecutive x-planes, that share
// their x-neighbours), each pointing at lane 0 of z = 0 of its row, wherever it lives:
// the user's grid, a received message, the grid's other end (a periodic axis in one
// box) or a row of zeros (BoxInput). z-neighbours beyond the row's ends are the r points
// at z_low and z_high.
template <int Radius, int Planes>
struct RowInputs {
  const double* along_x[2 * Radius + Planes];  // planes x - r .. x + Planes - 1 + r; the centres at r ..
  const double* along_y[Planes][2 * Radius];   // per centre: rows y - 1 .. y - r, then y + 1 .. y + r
  const double* z_low[Planes];
  const double* z_high[Planes];
  const double* centre(int plane) const { return along_x[Radius + plane]; }
  const double* x_row(int plane) const { return along_x[plane]; }
  const double* y_row(int centre, int index) const { return along_y[centre][index]; }
};

// The same rows for an output row whose x- and y-neighbours all lie in the box: one
// array, fixed strides. The vector loop then holds one pointer and two strides instead
// of 4r + 2 pointers (measured: the pointers' version is a fifth slower on float64).
template <int Radius, int Planes>
struct StridedRows {
  const double* first_centre;
  std::int64_t stride_x, stride_y;
  const double* z_low[Planes];
  const double* z_high[Planes];
  const double* centre(int plane) const { return first_centre + plane * stride_x; }
  const double* x_row(int plane) const { return first_centre + (plane - Radius) * stride_x; }
  const double* y_row(int centre, int index) const {
    const int d = index < Radius ? -(index + 1) : index - Radius + 1;
    return first_centre + centre * stride_x + d * stride_y;
  }
};

// The value of one point (T = double) or of four consecutive lanes (T = Vector) at lane k
// of the centre row, summed in the documented order. `centre` is where the centre row's
// lanes k - r .. k + r are read (the row itself, or a copy of its end with the ghosts
// beyond); x- and y-neighbours are read from their rows at lane k.
template <int Radius, int Lanes, bool Symmetric, class T>
inline T point_value(const Coefficients<Radius, T>& c, const double* centre, const double* const* along_x,
                     const double* const* along_y, std::int64_t k) {
  T sum = c.centre * read<T>(centre);
#pragma GCC unroll 6
  for (int d = 1; d <= Radius; ++d)
    sum = add_pair<Symmetric, T>(sum, c.minus[0][d - 1], c.plus[0][d - 1], read<T>(along_x[Radius - d] + k),
                                 read<T>(along_x[Radius + d] + k));
#pragma GCC unroll 6
  for (int d = 1; d <= Radius; ++d)
    sum = add_pair<Symmetric, T>(sum, c.minus[1][d - 1], c.plus[1][d - 1], read<T>(along_y[d - 1] + k),
                                 read<T>(along_y[Radius + d - 1] + k));
#pragma GCC unroll 6
  for (int d = 1; d <= Radius; ++d)
    sum = add_pair<Symmetric, T>(sum, c.minus[2][d - 1], c.plus[2][d - 1], read<T>(centre - d * Lanes),
                                 read<T>(centre + d * Lanes));
  return sum;
}

// The z-neighbours of a vector of four lanes are the four lanes at offsets -reach..reach
// (reach = r x lanes per point) from it. Loading each of them costs 2r + 1 loads per
// vector, most of them unaligned and many split across cache lines; instead a few
// "anchor" windows are loaded, at offsets -reach, ..., -8, -4, 0, 4, 8, ..., reach, and
// every other window is one shuffle of the two anchors around it. The anchors at
// +-reach are the outermost points the stencil reads, so no load leaves the points the
// stencil needs (another thread may be writing beyond them).
template <int Reach>
struct ZAnchors {
  static constexpr int inner = (Reach - 1) / vector_lanes;  // multiples of four strictly inside (0, reach)
  static constexpr int count = 2 * inner + 3;
  static constexpr int centre = inner + 1;
  static constexpr int offset(int index) {
    if (index == 0) return -Reach;
    if (index == count - 1) return Reach;
    return (index - centre) * vector_lanes;
  }
  // The last anchor at or before `window_offset`.
  static constexpr int below(int window_offset) {
    int index = 0;
    while (index + 1 < count && offset(index + 1) <= window_offset) ++index;
    return index;
  }
};

// The four lanes at `Offset` from the vector, from the anchors.
template <int Reach, int Offset>
[[gnu::always_inline]] inline Vector z_window(const Vector (&anchors)[ZAnchors<Reach>::count]) {
  using Anchors = ZAnchors<Reach>;
  constexpr int low = Anchors::below(Offset);
  constexpr int shift = Offset - Anchors::offset(low);
  if constexpr (shift == 0) {
    return anchors[low];
  } else {
    // Lane i is lane shift + i of the low anchor, or, past its end, of the high one.
    constexpr int gap = Anchors::offset(low + 1) - Anchors::offset(low);
    constexpr auto lane = [](int i) { return shift + i < vector_lanes ? shift + i : shift + i - gap + vector_lanes; };
    return __builtin_shufflevector(anchors[low], anchors[low + 1], lane(0), lane(1), lane(2), lane(3));
  }
}

template <int Radius, int Lanes>
using AnchorsOf = ZAnchors<Radius * Lanes>;

// Where a vector's centre row is read: lanes k + Offset .. k + Offset + 3 of it, for the
// z-neighbours (and the centre) of the vector at lane k.
struct InRow {  // all of them inside the row, or inside a copy of its end with its ghosts
  const double* at_k;
  template <int Offset>
  Vector at() const {
    return load(at_k + Offset);
  }
};

// A vector whose z-neighbours cross an end of the row: at lane Start from its lower end
// (Upper false, Start >= 0) or from its upper end (Upper true, Start < 0: lane
// row_lanes + Start). Lanes beyond the end are the row's ghosts (z_low holds row lanes
// -reach .. -1, z_high row_lanes ..); lanes further out, which no window reads but a
// slide's anchors may cover, are 0 and never read from memory. Every position is known
// at compile time, so a load that straddles the end is built in registers from single
// lanes: a copy of the end through memory would be read back at once, and the vector
// load of several just-stored lanes stalls on store-to-load forwarding (measured: 20-25 %
// of the kernel on 24^3).
template <int Reach, int Start, bool Upper>
struct AtEnd {
  const double* end;     // the row's lane 0 (lower) or lane row_lanes (upper)
  const double* ghosts;  // z_low or z_high
  template <int Lane>
  double lane() const {
    if constexpr (Upper)
      return Lane < 0 ? end[Lane] : Lane < Reach ? ghosts[Lane] : 0.0;
    else
      return Lane >= 0 ? end[Lane] : Lane >= -Reach ? ghosts[Reach + Lane] : 0.0;
  }
  template <int Offset>
  Vector at() const {
    constexpr int first = Start + Offset;
    if constexpr (Upper ? first + vector_lanes <= 0 : first >= 0)
      return load(end + first);
    else if constexpr (Upper ? first >= 0 && first + vector_lanes <= Reach
                             : first >= -Reach && first + vector_lanes <= 0)
      return load(ghosts + (Upper ? first : Reach + first));
    else
      return Vector{lane<first>(), lane<first + 1>(), lane<first + 2>(), lane<first + 3>()};
  }
};

template <int Radius, int Lanes, class Centre, int... Index>
[[gnu::always_inline]] inline void load_anchors(const Centre& centre,
                                                Vector (&anchors)[AnchorsOf<Radius, Lanes>::count],
                                                std::integer_sequence<int, Index...>) {
  ((anchors[Index] = centre.template at<AnchorsOf<Radius, Lanes>::offset(Index)>()), ...);
}

template <int Radius, int Lanes, class Centre>
[[gnu::always_inline]] inline void load_anchors(const Centre& centre,
                                                Vector (&anchors)[AnchorsOf<Radius, Lanes>::count]) {
  load_anchors<Radius, Lanes>(centre, anchors, std::make_integer_sequence<int, AnchorsOf<Radius, Lanes>::count>{});
}

// Adds the z pairs d = 1..r (Distance = d - 1) to `sum` from plain loads of the centre
// row (complex128), in the documented order.
template <int Radius, int Lanes, bool Symmetric, class Centre, int... Distance>
[[gnu::always_inline]] inline Vector add_plain_z_pairs(const Coefficients<Radius, Vector>& c, Vector sum,
                                                       const Centre& centre, std::integer_sequence<int, Distance...>) {
  ((sum = add_pair<Symmetric, Vector>(sum, c.minus[2][Distance], c.plus[2][Distance],
                                      centre.template at<-(Distance + 1) * Lanes>(),
                                      centre.template at<(Distance + 1) * Lanes>())),
   ...);
  return sum;
}

// Adds the z pairs d = 1..r (Distance = d - 1) to `sum`, in the documented order.
template <int Radius, int Lanes, bool Symmetric, int... Distance>
[[gnu::always_inline]] inline Vector add_z_pairs(const Coefficients<Radius, Vector>& c, Vector sum,
                                                 const Vector (&anchors)[AnchorsOf<Radius, Lanes>::count],
                                                 std::integer_sequence<int, Distance...>) {
  constexpr int reach = Radius * Lanes;
  ((sum = add_pair<Symmetric, Vector>(sum, c.minus[2][Distance], c.plus[2][Distance],
                                      z_window<reach, -(Distance + 1) * Lanes>(anchors),
                                      z_window<reach, (Distance + 1) * Lanes>(anchors))),
   ...);
  return sum;
}

template <int Radius, bool Symmetric, class Rows>
[[gnu::always_inline]] inline Vector add_y_pairs(const Coefficients<Radius, Vector>& c, Vector sum, const Rows& rows,
                                                 int centre, std::int64_t k) {
#pragma GCC unroll 6
  for (int d = 1; d <= Radius; ++d)
    sum = add_pair<Symmetric, Vector>(sum, c.minus[1][d - 1], c.plus[1][d - 1], load(rows.y_row(centre, d - 1) + k),
                                      load(rows.y_row(centre, Radius + d - 1) + k));
  return sum;
}

// (The helpers of the row loop are forced inline: GCC's heuristics leave the
// two-plane one out of line, and a call per vector costs a third of its time.)

// Four lanes at lane k of two consecutive planes' rows, in the documented order each.
// The planes share their x-neighbours: of the 2r + 2 x-loads, the two centres come from
// the anchors and the other 2r serve both vectors. float64 only (anchors).
template <int Radius, bool Symmetric, class Rows, class Centre>
[[gnu::always_inline]] inline void two_plane_values(const Coefficients<Radius, Vector>& c, const Rows& rows,
                                                    const Centre& centre_first, const Centre& centre_second,
                                                    std::int64_t k, Vector& first, Vector& second) {
  using Anchors = AnchorsOf<Radius, 1>;
  Vector anchors_first[Anchors::count], anchors_second[Anchors::count];
  load_anchors<Radius, 1>(centre_first, anchors_first);
  load_anchors<Radius, 1>(centre_second, anchors_second);
  Vector along_x[2 * Radius + 2];  // planes x - r .. x + 1 + r
#pragma GCC unroll 14
  for (int plane = 0; plane < 2 * Radius + 2; ++plane)
    if (plane != Radius && plane != Radius + 1) along_x[plane] = load(rows.x_row(plane) + k);
  along_x[Radius] = anchors_first[Anchors::centre];
  along_x[Radius + 1] = anchors_second[Anchors::centre];
  Vector sum_first = c.centre * along_x[Radius];
  Vector sum_second = c.centre * along_x[Radius + 1];
#pragma GCC unroll 6
  for (int d = 1; d <= Radius; ++d) {
    sum_first = add_pair<Symmetric, Vector>(sum_first, c.minus[0][d - 1], c.plus[0][d - 1], along_x[Radius - d],
                                            along_x[Radius + d]);
    sum_second = add_pair<Symmetric, Vector>(sum_second, c.minus[0][d - 1], c.plus[0][d - 1], along_x[Radius + 1 - d],
                                             along_x[Radius + 1 + d]);
  }
  sum_first = add_y_pairs<Radius, Symmetric>(c, sum_first, rows, 0, k);
  sum_second = add_y_pairs<Radius, Symmetric>(c, sum_second, rows, 1, k);
  first = add_z_pairs<Radius, 1, Symmetric>(c, sum_first, anchors_first, std::make_integer_sequence<int, Radius>{});
  second = add_z_pairs<Radius, 1, Symmetric>(c, sum_second, anchors_second, std::make_integer_sequence<int, Radius>{});
}

// Four lanes at lane k of one plane's row, in the documented order: z-neighbours from
// anchors (float64) or plain loads (complex128: a z-neighbour is a whole 16-byte point
// away, its loads split cache lines less often, and the anchors' shuffles across the
// vector's 128-bit halves cost more than they save, 5-15 % measured).
template <int Radius, int Lanes, bool Symmetric, class Rows, class Centre>
[[gnu::always_inline]] inline Vector one_plane_value(const Coefficients<Radius, Vector>& c, const Rows& rows,
                                                     const Centre& centre, std::int64_t k) {
  using Anchors = AnchorsOf<Radius, Lanes>;
  Vector anchors[Anchors::count];
  Vector sum;
  if constexpr (Lanes == 1) {
    load_anchors<Radius, Lanes>(centre, anchors);
    sum = c.centre * anchors[Anchors::centre];
  } else {
    sum = c.centre * centre.template at<0>();
  }
#pragma GCC unroll 6
  for (int d = 1; d <= Radius; ++d)
    sum = add_pair<Symmetric, Vector>(sum, c.minus[0][d - 1], c.plus[0][d - 1], load(rows.x_row(Radius - d) + k),
                                      load(rows.x_row(Radius + d) + k));
  sum = add_y_pairs<Radius, Symmetric>(c, sum, rows, 0, k);
  if constexpr (Lanes == 1)
    return add_z_pairs<Radius, 1, Symmetric>(c, sum, anchors, std::make_integer_sequence<int, Radius>{});
  else
    return add_plain_z_pairs<Radius, Lanes, Symmetric>(c, sum, centre, std::make_integer_sequence<int, Radius>{});
}

// The z-neighbours of a vector at lane k, when its row is read as a sliding run of
// whole vectors ("anchors") at lanes k + 4j, j = -side .. side: the window at Offset is
// anchor j = floor(Offset / 4) shifted by Offset mod 4 into its successor.
template <int Side, int Offset>
[[gnu::always_inline]] inline Vector sliding_window(const Vector (&anchors)[2 * Side + 1]) {
  constexpr int index = Side + (Offset >= 0 ? Offset / vector_lanes : -((-Offset + vector_lanes - 1) / vector_lanes));
  constexpr int shift = Offset - (index - Side) * vector_lanes;
  if constexpr (shift == 0)
    return anchors[index];
  else
    return __builtin_shufflevector(anchors[index], anchors[index + 1], shift, shift + 1, shift + 2, shift + 3);
}

template <int Radius, int Lanes, bool Symmetric, int Side, int... Distance>
[[gnu::always_inline]] inline Vector add_sliding_z_pairs(const Coefficients<Radius, Vector>& c, Vector sum,
                                                         const Vector (&anchors)[2 * Side + 1],
                                                         std::integer_sequence<int, Distance...>) {
  ((sum = add_pair<Symmetric, Vector>(sum, c.minus[2][Distance], c.plus[2][Distance],
                                      sliding_window<Side, -(Distance + 1) * Lanes>(anchors),
                                      sliding_window<Side, (Distance + 1) * Lanes>(anchors))),
   ...);
  return sum;
}

// Whole vectors slide_rows reads beyond a vector on each side of it.
template <int Radius, int Lanes>
constexpr int sliding_side = (Radius * Lanes + vector_lanes - 1) / vector_lanes;

// Where a slide finds the x- and y-neighbours of its centre rows: here, the box's own
// rows at two strides from them. The strides are held in locals, so that the compiler
// keeps them (and the coefficients) in registers; read through the row structures, it
// reloaded them from the stack at every step.
struct AtStrides {
  std::int64_t stride_x, stride_y;
  // Row x - d of the first plane's centre row, row x + d of the last plane's.
  template <int Planes>
  const double* x_below(const double* const (&centre)[Planes], int d) const {
    return centre[0] - d * stride_x;
  }
  template <int Planes>
  const double* x_above(const double* const (&centre)[Planes], int d) const {
    return centre[Planes - 1] + d * stride_x;
  }
  const double* y_below(const double* centre, int d) const { return centre - d * stride_y; }
  const double* y_above(const double* centre, int d) const { return centre + d * stride_y; }
};

// A row of one plane whose neighbours lie anywhere (a received face, the grid's other
// end, a row of zeros): one pointer per neighbour row, 4r for the slide to hold.
template <int Radius>
struct ApartRows {
  const double* x_lower[Radius];  // rows x - 1 .. x - r
  const double* x_upper[Radius];  // rows x + 1 .. x + r
  const double* y_lower[Radius];
  const double* y_upper[Radius];
  const double* x_below(const double* const (&)[1], int d) const { return x_lower[d - 1]; }
  const double* x_above(const double* const (&)[1], int d) const { return x_upper[d - 1]; }
  const double* y_below(const double*, int d) const { return y_lower[d - 1]; }
  const double* y_above(const double*, int d) const { return y_upper[d - 1]; }
};

// One step of slide_row: the vectors at lane k of each plane's row, in the documented
// order, then the anchors moved on by one. The newest anchor is loaded here, or, at a
// row's upper end (LoadTop false), built by the caller.
template <int Radius, int Lanes, bool Symmetric, int Planes, bool Stream, bool LoadTop = true, class Neighbours>
[[gnu::always_inline]] inline void sliding_step(const Coefficients<Radius, Vector>& c,
                                                const double* const (&centre)[Planes], const Neighbours& neighbours,
                                                Vector (&anchors)[Planes][2 * sliding_side<Radius, Lanes> + 1],
                                                std::int64_t k, double* const (&target)[Planes]) {
  constexpr int side = sliding_side<Radius, Lanes>;
  constexpr int count = 2 * side + 1;
  Vector along_x[2 * Radius + Planes];  // planes x - r .. x + Planes - 1 + r
#pragma GCC unroll 6
  for (int d = 1; d <= Radius; ++d) {
    along_x[Radius - d] = load(neighbours.x_below(centre, d) + k);
    along_x[Radius + Planes - 1 + d] = load(neighbours.x_above(centre, d) + k);
  }
#pragma GCC unroll 2
  for (int plane = 0; plane < Planes; ++plane) {
    if constexpr (LoadTop) anchors[plane][count - 1] = load(centre[plane] + k + side * vector_lanes);
    along_x[Radius + plane] = anchors[plane][side];
  }
#pragma GCC unroll 2
  for (int plane = 0; plane < Planes; ++plane) {
    Vector sum = c.centre * along_x[Radius + plane];
#pragma GCC unroll 6
    for (int d = 1; d <= Radius; ++d)
      sum = add_pair<Symmetric, Vector>(sum, c.minus[0][d - 1], c.plus[0][d - 1], along_x[Radius + plane - d],
                                        along_x[Radius + plane + d]);
#pragma GCC unroll 6
    for (int d = 1; d <= Radius; ++d)
      sum = add_pair<Symmetric, Vector>(sum, c.minus[1][d - 1], c.plus[1][d - 1],
                                        load(neighbours.y_below(centre[plane], d) + k),
                                        load(neighbours.y_above(centre[plane], d) + k));
    sum = add_sliding_z_pairs<Radius, Lanes, Symmetric, side>(c, sum, anchors[plane],
                                                              std::make_integer_sequence<int, Radius>{});
    store<Stream>(target[plane] + k, sum);
#pragma GCC unroll 13
    for (int j = 0; j + 1 < count; ++j) anchors[plane][j] = anchors[plane][j + 1];
  }
}

// Input bytes a band of rows may occupy: half the core's L2, leaving room for the output
// and the other streams. On a Zen 4 (1 MiB L2) a quarter runs from memory 1.04-1.2x
// slower; the whole L2 float64 a little faster and complex128 a little slower
// (`python dev/kernel_ab.py`).
inline std::int64_t blocking_budget_bytes() { return level2_cache_bytes() / 2; }

// The same for a row slide whose input comes from memory: half the core's share of the
// last-level cache. Each band reads 2r rows beyond its own, once more from memory, which
// bands sized for the L2 make a sixth (float64) to a third (complex128) more input on a
// 192^3 grid; bands this tall hold whole planes of such grids, and the rows of the
// planes behind the leading one come back from the last level, where the L2 evicts them.
// On a Zen 3 (512 KiB L2, 16 MiB share): 1 x 192^3 float64 1.08x, complex128 1.17x,
// 32 x 96^3 1.05-1.10x (`python dev/kernel_ab.py`).
inline std::int64_t from_memory_blocking_budget_bytes() {
  return std::max(blocking_budget_bytes(), last_level_share_bytes() / 2);
}

// How far ahead of the row being computed a streamed sweep prefetches the rows its
// x-step reads first (slide_in_bands).
constexpr std::int64_t streamed_prefetch_bytes = 3 << 10;

// The centre row's lanes [from, to) (box lanes: negative ones and those past row_lanes
// are the ghosts beyond its ends) copied to `target`.
inline void gather_centre(const double* row, const double* z_low, const double* z_high, std::int64_t row_lanes,
                          std::int64_t reach, std::int64_t from, std::int64_t to, double* target) {
  for (std::int64_t lane = from; lane < to; ++lane)
    target[lane - from] = lane < 0 ? z_low[reach + lane] : lane < row_lanes ? row[lane] : z_high[lane - row_lanes];
}

// Writes lanes [begin, end), fewer than a vector, of the output rows of `Planes`
// consecutive x-planes (write_rows' arguments; `beside`: the ghosts lie beside the
// rows), with plain stores. Such a piece (an overlap schedule's z shell: r points at each
// end of every row) is the part within the row of one vector that covers it: computed
// whole, only the piece's lanes stored. Lane by lane, a piece of two lanes cost 45 ns in
// cache; that remains for pieces of rows shorter than a vector and its reach, and for
// pieces within reach of an end but not at it. Out of line: inlined into write_rows, it
// made the rows' own loop 2-10 % slower (code layout; measured with kernel_ab).
template <int Radius, int Lanes, bool Symmetric, int Planes, class Rows>
[[gnu::noinline]] void write_short_piece(const Coefficients<Radius, double>& one,
                                         const Coefficients<Radius, Vector>& four, const Rows& rows,
                                         std::int64_t row_lanes, std::int64_t begin, std::int64_t end, bool beside,
                                         double* const (&target)[Planes], const double* const (&prefetch)[Planes]) {
  constexpr std::int64_t reach = Radius * Lanes;
  const std::int64_t at = std::min(begin, row_lanes - vector_lanes);
  auto write_piece = [&](const auto& centre_first, const auto& centre_second) {
    Vector value[Planes];
    if constexpr (Planes == 2)
      two_plane_values<Radius, Symmetric>(four, rows, centre_first, centre_second, at, value[0], value[1]);
    else
      value[0] = one_plane_value<Radius, Lanes, Symmetric>(four, rows, centre_first, at);
    for (int plane = 0; plane < Planes; ++plane) {
      alignas(32) double lanes[vector_lanes];
      std::memcpy(lanes, &value[plane], sizeof lanes);
      for (std::int64_t k = begin; k < end; ++k) target[plane][k] = lanes[k - at];
    }
  };
  const bool inside = beside || (at >= reach && at + vector_lanes + reach <= row_lanes);
  if (row_lanes >= vector_lanes + reach && (inside || at == 0 || at == row_lanes - vector_lanes)) {
    // Each piece is a new line of the plane the next x-step reads first: from memory,
    // the core's own prefetchers leave each piece waiting for it.
    if (prefetch[0] != nullptr)
      for (int plane = 0; plane < Planes; ++plane) __builtin_prefetch(prefetch[plane] + at, 0, 3);
    if (inside)
      write_piece(InRow{rows.centre(0) + at}, InRow{rows.centre(Planes - 1) + at});
    else if (at == 0)
      write_piece(AtEnd<reach, 0, false>{rows.centre(0), rows.z_low[0]},
                  AtEnd<reach, 0, false>{rows.centre(Planes - 1), rows.z_low[Planes - 1]});
    else
      write_piece(AtEnd<reach, -vector_lanes, true>{rows.centre(0) + row_lanes, rows.z_high[0]},
                  AtEnd<reach, -vector_lanes, true>{rows.centre(Planes - 1) + row_lanes, rows.z_high[Planes - 1]});
    return;
  }
  for (int plane = 0; plane < Planes; ++plane) {
    double padded[vector_lanes + 2 * reach];
    gather_centre(rows.centre(plane), rows.z_low[plane], rows.z_high[plane], row_lanes, reach, begin - reach,
                  end + reach, padded);
    const double* along_x[2 * Radius + 1];  // planes x + plane - r .. x + plane + r
    const double* along_y[2 * Radius];
    for (int index = 0; index < 2 * Radius + 1; ++index) along_x[index] = rows.x_row(plane + index);
    for (int index = 0; index < 2 * Radius; ++index) along_y[index] = rows.y_row(plane, index);
    for (std::int64_t k = begin; k < end; ++k)
      target[plane][k] =
          point_value<Radius, Lanes, Symmetric, double>(one, padded + reach + (k - begin), along_x, along_y, k);
  }
}

// Lanes [begin, end) of write_rows' `rows` where the region ends within reach of an end
// of a row (`low`: the lower, `high`: the upper) in a way its regular vectors do not
// cover, or the row is short: the ends of the centre rows with their ghosts are copied,
// lanes [-reach, edge) and [row_lanes - edge, row_lanes + reach), enough for every
// vector within reach of an end; a row shorter than two such ends is copied whole.
// `write_vector(k, centre_first, centre_second)` writes the vector at lane k.
template <int Reach, int Planes, class Rows, class WriteVector>
[[gnu::always_inline]] inline void write_near_ends(const Rows& rows, std::int64_t row_lanes, std::int64_t begin,
                                                   std::int64_t end, bool low, bool high,
                                                   const WriteVector& write_vector) {
  constexpr std::int64_t reach = Reach;
  constexpr std::int64_t edge = 2 * reach + vector_lanes;
  constexpr std::int64_t whole_below = 2 * edge;
  const bool whole = row_lanes < whole_below;
  const std::int64_t high_from = whole ? -reach : row_lanes - edge;
  double low_copy[Planes][edge + reach], high_copy[Planes][whole_below + 2 * reach];
  for (int plane = 0; plane < Planes; ++plane) {
    if (low && !whole)
      gather_centre(rows.centre(plane), rows.z_low[plane], rows.z_high[plane], row_lanes, reach, -reach, edge,
                    low_copy[plane]);
    if (high || (low && whole))
      gather_centre(rows.centre(plane), rows.z_low[plane], rows.z_high[plane], row_lanes, reach, high_from,
                    row_lanes + reach, high_copy[plane]);
  }
  auto centre = [&](int plane, std::int64_t k) {
    if (whole && (low || high)) return InRow{high_copy[plane] + (k - high_from)};
    if (k < reach) return InRow{low_copy[plane] + (k + reach)};
    if (k + vector_lanes + reach > row_lanes) return InRow{high_copy[plane] + (k - high_from)};
    return InRow{rows.centre(plane) + k};
  };
  std::int64_t k = begin;
  for (; k + vector_lanes <= end; k += vector_lanes) write_vector(k, centre(0, k), centre(Planes - 1, k));
  if (k < end) write_vector(end - vector_lanes, centre(0, end - vector_lanes), centre(Planes - 1, end - vector_lanes));
}

// Writes lanes [begin, end) of the output rows of `Planes` (1 or 2) consecutive x-planes
// (streamed with Stream, else with plain stores): whole vectors, the last one overlapping
// its predecessor when the count is not a multiple of four (it writes the same values
// again); a piece shorter than a vector by write_short_piece. The
// rows may be a user's grid, with no room for ghosts: a vector whose z-neighbours reach
// past an end of the row takes those lanes from the row's z ghosts (AtEnd), or, for
// short rows and regions that end within reach of a row's end, from a copy of the end
// with its ghosts. `prefetch` rows, if any, are rows a later row or x-step reads first
// (slide_in_bands), brought towards the core.
template <int Radius, int Lanes, bool Symmetric, int Planes, bool Stream, class Rows>
[[gnu::always_inline]] inline void write_rows(const Coefficients<Radius, double>& one,
                                              const Coefficients<Radius, Vector>& four, const Rows& rows,
                                              std::int64_t row_lanes, std::int64_t begin, std::int64_t end,
                                              double* const (&target)[Planes],
                                              const double* const (&prefetch)[Planes]) {
  constexpr std::int64_t reach = Radius * Lanes;
  auto write_vector = [&](std::int64_t k, const auto& centre_first, const auto& centre_second) {
    if constexpr (Planes == 2) {
      Vector first, second;
      two_plane_values<Radius, Symmetric>(four, rows, centre_first, centre_second, k, first, second);
      store<Stream>(target[0] + k, first);
      store<Stream>(target[1] + k, second);
    } else {
      const Vector value = one_plane_value<Radius, Lanes, Symmetric>(four, rows, centre_first, k);
      store<Stream>(target[0] + k, value);
    }
  };
  auto in_row = [&](int plane, std::int64_t k) { return InRow{rows.centre(plane) + k}; };
  // Ghosts right beside the row (a padded array) need no care: every vector is a body one.
  bool beside = true;
  for (int plane = 0; plane < Planes; ++plane)
    beside = beside && rows.z_low[plane] + reach == rows.centre(plane) &&
             rows.z_high[plane] == rows.centre(plane) + row_lanes;
  if (end - begin < vector_lanes)
    return write_short_piece<Radius, Lanes, Symmetric, Planes>(one, four, rows, row_lanes, begin, end, beside, target,
                                                               prefetch);
  // Vectors within reach of an end: `ends` at each end of a row that the region reaches.
  constexpr int ends = (reach + vector_lanes - 1) / vector_lanes;
  const bool low = !beside && begin < reach;
  const bool high = !beside && end > row_lanes - reach;
  const std::int64_t body_begin = low ? ends * vector_lanes : begin;
  const std::int64_t body_end = high ? row_lanes - ends * vector_lanes : end;
  const std::int64_t body = body_end - body_begin;
  // Every load stays inside the row or its ghosts when the end vectors' reach does
  // (row_lanes >= 4 ends + reach), and every lane of [begin, end) is written, none
  // outside it, when the body is empty, whole vectors, or (from lane 0) one vector
  // overlapping the low end's, or when the two ends' vectors overlap each other (a row
  // shorter than both: 6-15 lanes at radius 2, an apply's small boxes).
  const bool body_covered = body == 0 || body >= vector_lanes ||
                            (low && body > 0 && body_end - vector_lanes >= reach) || (low && high && body < 0);
  const bool regular = beside || ((!low || begin == 0) && (!high || end == row_lanes) && body_covered &&
                                  row_lanes >= ends * vector_lanes + reach);
  if (regular) {
    auto low_end = [&]<int... Vectors>(std::integer_sequence<int, Vectors...>) {
      (write_vector(Vectors * vector_lanes, AtEnd<reach, Vectors * vector_lanes, false>{rows.centre(0), rows.z_low[0]},
                    AtEnd<reach, Vectors * vector_lanes, false>{rows.centre(Planes - 1), rows.z_low[Planes - 1]}),
       ...);
    };
    auto high_end = [&]<int... Vectors>(std::integer_sequence<int, Vectors...>) {
      (write_vector(row_lanes - (Vectors + 1) * vector_lanes,
                    AtEnd<reach, -(Vectors + 1) * vector_lanes, true>{rows.centre(0) + row_lanes, rows.z_high[0]},
                    AtEnd<reach, -(Vectors + 1) * vector_lanes, true>{rows.centre(Planes - 1) + row_lanes,
                                                                      rows.z_high[Planes - 1]}),
       ...);
    };
    if (low) low_end(std::make_integer_sequence<int, ends>{});
    std::int64_t k = body_begin;
    if (prefetch[0] != nullptr)  // one prefetch per 64-byte line of each row
      for (; k + 2 * vector_lanes <= body_end; k += 2 * vector_lanes) {
        for (int plane = 0; plane < Planes; ++plane) __builtin_prefetch(prefetch[plane] + k, 0, 3);
        write_vector(k, in_row(0, k), in_row(Planes - 1, k));
        write_vector(k + vector_lanes, in_row(0, k + vector_lanes), in_row(Planes - 1, k + vector_lanes));
      }
    for (; k + vector_lanes <= body_end; k += vector_lanes) write_vector(k, in_row(0, k), in_row(Planes - 1, k));
    if (k < body_end)
      write_vector(body_end - vector_lanes, in_row(0, body_end - vector_lanes),
                   in_row(Planes - 1, body_end - vector_lanes));
    if (high) high_end(std::make_integer_sequence<int, ends>{});
    return;
  }
  write_near_ends<reach, Planes>(rows, row_lanes, begin, end, low, high, write_vector);
}

// Where the rows of plane x (box coordinates, -r <= x < n + r) start and how far apart
// they are: the box's own plane or a ghost plane beyond it.
struct PlaneRows {
  const double* first;
  std::int64_t stride_y;
  const double* at(std::int64_t y) const { return first + y * stride_y; }
};

inline PlaneRows plane_rows(const BoxInput& input, const Index3& n, int radius, std::int64_t x) {
  const Rows& rows = x < 0 ? input.x_ghosts[0] : x >= n[0] ? input.x_ghosts[1] : input.box;
  const std::int64_t index = x < 0 ? x + radius : x >= n[0] ? x - n[0] : x;
  return {rows.first + index * rows.stride_x, rows.stride_y};
}

// Row y (-r <= y < n + r) of box plane x (0 <= x < n).
inline const double* row_of_plane(const BoxInput& input, const Index3& n, int radius, const PlaneRows& plane,
                                  std::int64_t x, std::int64_t y) {
  if (y < 0) return input.y_ghosts[0].at(x, y + radius);
  if (y >= n[1]) return input.y_ghosts[1].at(x, y - n[1]);
  return plane.at(y);
}

// Lanes [begin, end) (at least four) of the rows `centre` of `Planes` consecutive
// x-planes, each read once, as whole vectors sliding along it (one load per vector); a
// point's z-neighbours are shuffles of two of them (sliding_window). Against loading
// each neighbour where it lies, this halves the kernel's loads, and loads, not
// arithmetic, set its pace: on a Zen 4, a 32-byte load that is not
// 32-byte aligned takes two load slots, and all but one of a point's z-neighbours are. Reads
// lanes begin - 4 side .. end + 4 side - 1 of each centre row: the caller keeps them
// inside input (inside the row, or, in a padded array, among the ghosts and the ghost
// rows around it). `prefetch`, if its first is not null, is where each plane's
// prefetches go (slide_in_bands says which rows).
//
// With Ends, [begin, end) is the whole row and its z ghosts lie elsewhere (`z_low`,
// `z_high`): the anchors beyond a row's ends are built from them (AtEnd), and the last
// vectors of a row, whose newest anchor would cross its upper end, are computed at
// compile-time offsets from it. Needs a row of at least 2 side + 1 vectors, whose
// upper end's anchors then stay inside it.
template <int Radius, int Lanes, bool Symmetric, int Planes, bool Ends, bool Stream, class Neighbours>
[[gnu::always_inline]] inline void slide_row(const Coefficients<Radius, Vector>& c,
                                             const double* const (&centre)[Planes], const Neighbours& neighbours,
                                             std::int64_t begin, std::int64_t end, double* const (&target)[Planes],
                                             const double* const (&prefetch)[Planes],
                                             [[maybe_unused]] const double* const (&z_low)[Planes],
                                             [[maybe_unused]] const double* const (&z_high)[Planes]) {
  constexpr int side = sliding_side<Radius, Lanes>;
  constexpr int reach = Radius * Lanes;
  constexpr int tail = side + 1;  // vectors computed from the upper end
  const std::int64_t last = end - vector_lanes;
  // With Ends, steps (k + 4 <= step_end) up to the first of the `tail` vectors, which
  // start at end - 4 tail: its newest anchor then stays inside the row, and at most
  // three lanes are computed twice (stepping on while the newest anchor fitted, a row of
  // whole vectors computed one of them twice: a sixth of a 24^3 box's rows).
  const std::int64_t step_end = Ends ? end - tail * vector_lanes + vector_lanes - 1 : end;
  Vector anchors[Planes][2 * side + 1];
  // The anchors of the vector at `from` (with Ends, `Start` lanes into the row).
  auto load_first_anchors = [&]<int Start>(std::int64_t from) {
    for (int plane = 0; plane < Planes; ++plane) {
      if constexpr (Ends) {
        [&]<int... J>(std::integer_sequence<int, J...>) {
          ((anchors[plane][J] =
                AtEnd<reach, Start, false>{centre[plane], z_low[plane]}.template at<(J - side) * vector_lanes>()),
           ...);
        }(std::make_integer_sequence<int, 2 * side>{});
      } else {
        for (int j = 0; j < 2 * side; ++j) anchors[plane][j] = load(centre[plane] + from + (j - side) * vector_lanes);
      }
    }
  };
  load_first_anchors.template operator()<0>(begin);
  std::int64_t k = begin;
  // A streamed row that starts 16 bytes past a 32-byte boundary (where numpy puts large
  // arrays) would take two 16-byte streaming stores per vector: its first vector is
  // written on its own, and the row goes on two lanes (a float64 point, half a
  // complex128 one: one point) further, from where every vector is 32-byte aligned.
  // Measured with `python dev/kernel_ab.py`: an apply's box input 1.09-1.12x (float64)
  // and 1.08-1.09x (complex128); padded float64, whose rows are then read unaligned, 1.0x.
  if constexpr (Stream && Planes == 1)
    if (reinterpret_cast<std::uintptr_t>(target[0] + begin) % 32 == 16) {
      sliding_step<Radius, Lanes, Symmetric, Planes, Stream>(c, centre, neighbours, anchors, k, target);
      k = begin + 2;
      load_first_anchors.template operator()<2>(k);
    }
  if (prefetch[0] != nullptr)  // one prefetch per 64-byte line of each row
    for (; k + 2 * vector_lanes <= step_end; k += 2 * vector_lanes) {
      for (int plane = 0; plane < Planes; ++plane) __builtin_prefetch(prefetch[plane] + k, 0, 3);
      sliding_step<Radius, Lanes, Symmetric, Planes, Stream>(c, centre, neighbours, anchors, k, target);
      sliding_step<Radius, Lanes, Symmetric, Planes, Stream>(c, centre, neighbours, anchors, k + vector_lanes, target);
    }
  if constexpr (Ends) {
    for (; k + vector_lanes <= step_end; k += vector_lanes)
      sliding_step<Radius, Lanes, Symmetric, Planes, Stream>(c, centre, neighbours, anchors, k, target);
    // The last `tail` vectors, at end - 4 tail .. end - 4 (the first may overlap what the
    // steps wrote: the same values again).
    const std::int64_t from = end - tail * vector_lanes;
    [&]<int... J, int... M>(std::integer_sequence<int, J...>, std::integer_sequence<int, M...>) {
      for (int plane = 0; plane < Planes; ++plane) {
        const double* upper = centre[plane] + end;
        ((anchors[plane][J] = AtEnd<reach, 0, true>{upper, z_high[plane]}
                                  .template at<-tail * vector_lanes + (J - side) * vector_lanes>()),
         ...);
      }
      (
          [&] {
            constexpr int newest = -(tail - M) * vector_lanes + side * vector_lanes;
            for (int plane = 0; plane < Planes; ++plane)
              anchors[plane][2 * side] =
                  AtEnd<reach, 0, true>{centre[plane] + end, z_high[plane]}.template at<newest>();
            sliding_step<Radius, Lanes, Symmetric, Planes, Stream, false>(c, centre, neighbours, anchors,
                                                                          from + M * vector_lanes, target);
          }(),
          ...);
    }(std::make_integer_sequence<int, 2 * side>{}, std::make_integer_sequence<int, tail>{});
  } else {
    for (; k <= last; k += vector_lanes)
      sliding_step<Radius, Lanes, Symmetric, Planes, Stream>(c, centre, neighbours, anchors, k, target);
    if (k < end) {  // the last vector overlaps its predecessor (it writes the same values again)
      for (int plane = 0; plane < Planes; ++plane)
        for (int j = 0; j < 2 * side; ++j) anchors[plane][j] = load(centre[plane] + last + (j - side) * vector_lanes);
      sliding_step<Radius, Lanes, Symmetric, Planes, Stream>(c, centre, neighbours, anchors, last, target);
    }
  }
}

// A slide's own copy of the coefficients, which stays in registers. Isotropic (the
// caller found every axis's coefficients equal bit for bit: a Laplacian on a cubic
// grid), its y and z coefficients are set from its x ones, so the compiler holds r + 1
// coefficient registers instead of 3r + 1 and, with AVX2's 16, spills none (the values,
// and so every result, are the same).
template <bool Isotropic, int Radius>
[[gnu::always_inline]] inline Coefficients<Radius, Vector> local_coefficients(
    const Coefficients<Radius, Vector>& shared) {
  Coefficients<Radius, Vector> c = shared;
  if constexpr (Isotropic)
    for (int axis = 1; axis < 3; ++axis)
      for (int d = 0; d < Radius; ++d) c.minus[axis][d] = c.minus[0][d], c.plus[axis][d] = c.plus[0][d];
  return c;
}

// Calls slide.template operator()<true>() where the stencil is isotropic and the caller
// may take that form (MayBe), else operator()<false>().
template <bool MayBe, class Slide>
inline void with_isotropy(bool isotropic, const Slide& slide) {
  if constexpr (MayBe)
    if (isotropic) return slide.template operator()<true>();
  slide.template operator()<false>();
}

// The rows y = 0 .. rows - 1 of `Planes` consecutive x-planes, lanes [begin, end), of a
// box whose x- and y-neighbours lie at fixed strides from its rows (slide_row). One call
// covers many rows, so a short row (a rank's 24^3 box) pays only its anchors' loads.
// `prefetch`, if not null, holds per plane where row y = 0 of this call prefetches, and
// its y-stride. With Ends, the z ghosts of row y of plane x + plane are row (x + plane,
// y_first + y) of `z_ghosts`.
// Isotropic: as local_coefficients.
template <int Radius, int Lanes, bool Symmetric, int Planes, bool Ends, bool Stream, bool Isotropic = false>
void slide_rows(const Coefficients<Radius, Vector>& shared, const double* first_centre, std::int64_t stride_x,
                std::int64_t stride_y, std::int64_t rows, std::int64_t begin, std::int64_t end, double* first_target,
                std::int64_t out_stride_x, std::int64_t out_stride_y, const PlaneRows* prefetch,
                const std::array<Rows, 2>* z_ghosts = nullptr, std::int64_t x = 0, std::int64_t y_first = 0) {
  const Coefficients<Radius, Vector> c = local_coefficients<Isotropic>(shared);
  const AtStrides neighbours{stride_x, stride_y};
  for (std::int64_t y = 0; y < rows; ++y) {
    const double* centre[Planes];
    double* target[Planes];
    const double* ahead[Planes];
    const double* z_low[Planes]{};
    const double* z_high[Planes]{};
    for (int plane = 0; plane < Planes; ++plane) {
      centre[plane] = first_centre + y * stride_y + plane * stride_x;
      target[plane] = first_target + y * out_stride_y + plane * out_stride_x;
      ahead[plane] = prefetch != nullptr ? prefetch[plane].at(y) : nullptr;
      if constexpr (Ends) {
        z_low[plane] = (*z_ghosts)[0].at(x + plane, y_first + y);
        z_high[plane] = (*z_ghosts)[1].at(x + plane, y_first + y);
      }
    }
    slide_row<Radius, Lanes, Symmetric, Planes, Ends, Stream>(c, centre, neighbours, begin, end, target, ahead, z_low,
                                                              z_high);
  }
}

// Lanes [begin, end) (at least four) of rows [0, rows) of planes [0, planes) of a padded
// grid in cache, with plain stores: a rank's sub-grid applied again and again, the case
// the in-cache rate is measured on. Every row's z ghosts lie beside it and its x- and
// y-neighbours at the box's strides, so the region is one loop nest of slide steps
// (sliding_step, the same per-point sums as every other path) with nothing decided per
// row: slide_row's prologue and prefetching loop, which this case never takes, cost
// registers and per-row work in the loop they share (`python dev/kernel_ab.py`). Both
// dtypes go two planes at a time and, Isotropic, hold one copy of the coefficients
// (local_coefficients); for complex128 the two together run 1.15x at 16^3-24^3.
template <int Radius, int Lanes, bool Symmetric, bool Isotropic>
[[gnu::noinline]] void slide_padded_in_cache(const Coefficients<Radius, Vector>& shared, const double* first_centre,
                                             std::int64_t stride_x, std::int64_t stride_y, std::int64_t planes,
                                             std::int64_t rows, std::int64_t begin, std::int64_t end,
                                             double* first_target, std::int64_t out_stride_x,
                                             std::int64_t out_stride_y) {
  const Coefficients<Radius, Vector> c = local_coefficients<Isotropic>(shared);
  const AtStrides neighbours{stride_x, stride_y};
  constexpr int side = sliding_side<Radius, Lanes>;
  const std::int64_t last = end - vector_lanes;
  auto sweep = [&]<int Planes>(std::int64_t x) {
    for (std::int64_t y = 0; y < rows; ++y) {
      const double* centre[Planes];
      double* target[Planes];
      for (int plane = 0; plane < Planes; ++plane) {
        centre[plane] = first_centre + (x + plane) * stride_x + y * stride_y;
        target[plane] = first_target + (x + plane) * out_stride_x + y * out_stride_y;
      }
      Vector anchors[Planes][2 * side + 1];
      auto load_anchors = [&](std::int64_t k) {
        for (int plane = 0; plane < Planes; ++plane)
          for (int j = 0; j < 2 * side; ++j) anchors[plane][j] = load(centre[plane] + k + (j - side) * vector_lanes);
      };
      load_anchors(begin);
      std::int64_t k = begin;
      for (; k <= last; k += vector_lanes)
        sliding_step<Radius, Lanes, Symmetric, Planes, false>(c, centre, neighbours, anchors, k, target);
      if (k < end) {  // the last vector overlaps its predecessor (it writes the same values again)
        load_anchors(last);
        sliding_step<Radius, Lanes, Symmetric, Planes, false>(c, centre, neighbours, anchors, last, target);
      }
    }
  };
  std::int64_t x = 0;
  // Two planes at a time share their x-neighbours' loads.
  for (; x + 2 <= planes; x += 2) sweep.template operator()<2>(x);
  for (; x < planes; ++x) sweep.template operator()<1>(x);
}

// The whole rows y in [y_begin, y_end), except those in [skip_begin, skip_end), of box plane x
// (0 <= x < n), whose x- or y-neighbours lie apart from the box (a received face, the
// grid's other end, a row of zeros), each slid with a pointer per neighbour row
// (ApartRows). `planes` are the plane rows of x - r .. x + r; `prefetch`, if not null,
// where this plane's prefetches go. Out of line, with one copy of the coefficients for
// all of a plane's rows: a call per plane, not per row, and slide_in_bands keeps a single
// inlined copy of the slide (each added copy of write_rows there slowed the rest).
template <int Radius, int Lanes, bool Symmetric, bool Stream>
[[gnu::noinline]] void slide_rows_apart(const Coefficients<Radius, Vector>& shared, const BoxInput& input,
                                        const Index3& n, const PlaneRows* planes, std::int64_t x, std::int64_t y_begin,
                                        std::int64_t y_end, std::int64_t skip_begin, std::int64_t skip_end,
                                        double* out_plane, const PlaneRows* prefetch) {
  const Coefficients<Radius, Vector> c = shared;
  const std::int64_t row_lanes = n[2] * Lanes;
  const PlaneRows& own = planes[Radius];
  const Rows& z_lower = input.z_ghosts[0];
  const Rows& z_upper = input.z_ghosts[1];
  const std::int64_t pieces[2][2] = {{y_begin, std::min(y_end, skip_begin)}, {std::max(y_begin, skip_end), y_end}};
  for (const auto& piece : pieces) {
    if (piece[0] >= piece[1]) continue;
    // Every row pointer of the first row looked up, then moved on by its rows' stride
    // from one row to the next: looked up afresh per row, they cost a third of a 24-lane
    // row's instructions. Only a y-neighbour beyond the plane (a ghost row, near y = 0
    // and y = n - 1) is looked up again.
    const std::int64_t y_first = piece[0];
    ApartRows<Radius> neighbours;
    for (int d = 1; d <= Radius; ++d) {
      neighbours.x_lower[d - 1] = planes[Radius - d].at(y_first);
      neighbours.x_upper[d - 1] = planes[Radius + d].at(y_first);
    }
    const double* centre[1] = {own.at(y_first)};
    double* target[1] = {out_plane + y_first * row_lanes};
    const double* ahead[1] = {prefetch != nullptr ? prefetch->at(y_first) : nullptr};
    const double* z_low[1] = {z_lower.at(x, y_first)};
    const double* z_high[1] = {z_upper.at(x, y_first)};
    for (std::int64_t y = y_first;;) {
      if (y >= Radius && y + Radius < n[1]) {
        for (int d = 1; d <= Radius; ++d) {
          neighbours.y_lower[d - 1] = centre[0] - d * own.stride_y;
          neighbours.y_upper[d - 1] = centre[0] + d * own.stride_y;
        }
      } else {
        for (int d = 1; d <= Radius; ++d) {
          neighbours.y_lower[d - 1] = row_of_plane(input, n, Radius, own, x, y - d);
          neighbours.y_upper[d - 1] = row_of_plane(input, n, Radius, own, x, y + d);
        }
      }
      slide_row<Radius, Lanes, Symmetric, 1, true, Stream>(c, centre, neighbours, 0, row_lanes, target, ahead, z_low,
                                                           z_high);
      if (++y == piece[1]) break;
      for (int d = 1; d <= Radius; ++d) {
        neighbours.x_lower[d - 1] += planes[Radius - d].stride_y;
        neighbours.x_upper[d - 1] += planes[Radius + d].stride_y;
      }
      centre[0] += own.stride_y;
      target[0] += row_lanes;
      if (prefetch != nullptr) ahead[0] += prefetch->stride_y;
      z_low[0] += z_lower.stride_y;
      z_high[0] += z_upper.stride_y;
    }
  }
}

// Rows of `row_lanes` lanes a band may hold, the x-planes' rows one band reads
// (`planes_read`) within `budget_bytes`: rows are visited in bands of y so that they stay
// in cache while x sweeps through them, and each input row is then fetched from memory
// once, not 2r + 1 times, also for grids whose planes are too large for the cache.
template <int Radius, int Lanes>
std::int64_t band_rows(std::int64_t budget_bytes, int planes_read, std::int64_t row_lanes) {
  const std::int64_t row_bytes = (row_lanes + 2 * Radius * Lanes) * static_cast<std::int64_t>(sizeof(double));
  return std::max<std::int64_t>(1, budget_bytes / (planes_read * row_bytes) - 2 * Radius);
}

// The sweep kernel::SweepKind::padded_in_cache: `region` (at least a vector of lanes
// along z) of a padded grid in cache, with plain stores, in bands for the L2 (both
// dtypes two planes at a time). Padded grids of both dtypes slide with one copy of the
// coefficients for all three axes where they are equal bit for bit (local_coefficients;
// -0.0 and 0.0 could sum differently).
template <int Radius, int Lanes, bool Symmetric>
void slide_padded(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                  double* out) {
  const Index3& n = plan.extent();
  const std::int64_t row_lanes = n[2] * Lanes;
  const std::int64_t out_stride_y = row_lanes, out_stride_x = n[1] * out_stride_y;
  const std::int64_t begin = region.begin[2] * Lanes, end = (region.begin[2] + region.extent[2]) * Lanes;
  const std::int64_t y_end = region.begin[1] + region.extent[1];
  const Coefficients<Radius, Vector> four(stencil);
  const Rows& box = input.box;
  const std::int64_t band = band_rows<Radius, Lanes>(blocking_budget_bytes(), 2 * Radius + 2, row_lanes);
  for (std::int64_t y_band = region.begin[1]; y_band < y_end; y_band += band) {
    auto slide = [&]<bool Isotropic> {
      slide_padded_in_cache<Radius, Lanes, Symmetric, Isotropic>(
          four, box.at(region.begin[0], y_band), box.stride_x, box.stride_y, region.extent[0],
          std::min(band, y_end - y_band), begin, end, out + region.begin[0] * out_stride_x + y_band * out_stride_y,
          out_stride_x, out_stride_y);
    };
    with_isotropy<Symmetric>(Symmetric && stencil.isotropic(), slide);
  }
}

// What the x-steps of slide_in_bands share: the box, its output and the region's lanes,
// [begin, end), of which rows slide [slide_begin, slide_end).
template <int Radius>
struct BandSlide {
  const RowCoefficients<Radius>& c;
  const BoxInput& input;
  const Index3& n;
  double* out;
  std::int64_t row_lanes, out_stride_x, out_stride_y;
  std::int64_t begin, end, slide_begin, slide_end;
  std::int64_t x_end;
  std::int64_t row_bytes;  // a padded input row, with its ghosts
  bool padded;             // the input is one padded array (kernel::Sweep)
  bool ends;               // whole rows slide with their z ghosts read from where they are
  bool prefetch_ahead;     // the sweep prefetches (kernel::Sweep)
  bool isotropic;          // the stencil's coefficients are equal on every axis
};

// Rows to prefetch for the x-step at x, per plane from y = 0, into `ahead`; whether the
// step prefetches. Streamed, the planes this step reads first (x + r ..),
// `streamed_prefetch_bytes` ahead of the row being computed: prefetched a whole x-step
// ahead, a 192^3 grid runs at 0.87x, and 8-16 KB ahead at 0.92-0.96x. Otherwise the
// planes the next step reads first (x + Planes + r ..), a step ahead: 3 KB ahead ran
// 24^3 and 48^3 grids from memory at 0.92 and 0.96x (`python dev/kernel_ab.py`).
template <int Radius, bool Stream, int Planes>
bool rows_ahead(const BandSlide<Radius>& s, std::int64_t x, PlaneRows (&ahead)[Planes]) {
  bool prefetching = s.prefetch_ahead;
  for (int plane = 0; plane < Planes; ++plane) {
    if constexpr (Stream) {
      if (!prefetching) break;
      ahead[plane] = plane_rows(s.input, s.n, Radius, x + Radius + plane);
      ahead[plane].first += (streamed_prefetch_bytes + s.row_bytes - 1) / s.row_bytes * ahead[plane].stride_y;
    } else {
      const std::int64_t next = x + Planes + Radius + plane;
      prefetching = prefetching && next < s.n[0] + Radius && next < s.x_end + Radius;
      if (prefetching) ahead[plane] = plane_rows(s.input, s.n, Radius, next);
    }
  }
  return prefetching;
}

// Rows [y_begin, y_end) of the x-step at x, whose x- and y-neighbours all lie in the box
// at its strides, slid at lanes [slide_begin, slide_end) (slide_rows); with Ends, whole,
// their z ghosts read from where they are. `prefetch`: as slide_rows.
template <int Radius, int Lanes, bool Symmetric, bool Stream, int Planes>
void slide_at_strides(const BandSlide<Radius>& s, std::int64_t x, std::int64_t y_begin, std::int64_t y_end,
                      const PlaneRows* prefetch) {
  const double* first_centre = s.input.box.at(x, y_begin);
  double* first_target = s.out + x * s.out_stride_x + y_begin * s.out_stride_y;
  const Rows& box = s.input.box;
  if (s.ends) {
    slide_rows<Radius, Lanes, Symmetric, Planes, true, Stream>(
        s.c.four, first_centre, box.stride_x, box.stride_y, y_end - y_begin, s.begin, s.end, first_target,
        s.out_stride_x, s.out_stride_y, prefetch, &s.input.z_ghosts, x, y_begin);
    return;
  }
  // float64 rows in cache slide with one copy of the coefficients for all three axes
  // where they are equal bit for bit (slide_rows; -0.0 and 0.0 could sum differently).
  constexpr bool may_be_isotropic = Lanes == 1 && !Stream && Symmetric;
  auto slide = [&]<bool Isotropic> {
    slide_rows<Radius, Lanes, Symmetric, Planes, false, Stream, Isotropic>(
        s.c.four, first_centre, box.stride_x, box.stride_y, y_end - y_begin, s.slide_begin, s.slide_end, first_target,
        s.out_stride_x, s.out_stride_y, prefetch);
  };
  with_isotropy<may_be_isotropic>(may_be_isotropic && s.isotropic, slide);
}

// The rows y in [y_band, y_stop) of the x-step at x that no slide wrote whole, row by row
// (write_rows): rows [slide_y_begin, slide_y_end) slid (`sliding`) are skipped, or only
// the lanes the slide left at each end are written. `planes`: the plane rows of
// x - r .. x + Planes - 1 + r; `ahead`, if `prefetching`, where the prefetches go.
template <int Radius, int Lanes, bool Symmetric, bool Stream, int Planes>
void write_rows_left(const BandSlide<Radius>& s, const Coefficients<Radius, Vector>& four,
                     const PlaneRows (&planes)[2 * Radius + Planes], const PlaneRows (&ahead)[Planes], bool prefetching,
                     std::int64_t x, std::int64_t y_band, std::int64_t y_stop, bool sliding, std::int64_t slide_y_begin,
                     std::int64_t slide_y_end, std::int64_t y_inside, std::int64_t y_outside) {
  const BoxInput& input = s.input;
  const bool ends_left = s.begin < s.slide_begin || s.slide_end < s.end;
  for (std::int64_t y = y_band; y < y_stop; ++y) {
    if (sliding && !ends_left && y == slide_y_begin) {
      y = slide_y_end - 1;
      continue;
    }
    double* target[Planes];
    const double* prefetch[Planes];
    const double* z_low[Planes];
    const double* z_high[Planes];
    for (int plane = 0; plane < Planes; ++plane) {
      target[plane] = s.out + (x + plane) * s.out_stride_x + y * s.out_stride_y;
      prefetch[plane] = prefetching ? ahead[plane].at(y) : nullptr;
      z_low[plane] = input.z_ghosts[0].at(x + plane, y);
      z_high[plane] = input.z_ghosts[1].at(x + plane, y);
    }
    // A piece shorter than a vector (a z shell) is a line of its own in each output
    // row: from memory its stores wait for the line unless it is fetched a step ahead
    // (one z face of a 192^3 grid: 42 ns per piece without, 19-23 with).
    if (prefetching && s.end - s.begin < vector_lanes)
      for (int plane = 0; plane < Planes; ++plane)
        if (x + 2 * Planes - 1 < s.x_end) __builtin_prefetch(target[plane] + Planes * s.out_stride_x + s.begin, 1, 3);
    if (y >= y_inside && y < y_outside) {
      StridedRows<Radius, Planes> rows{input.box.at(x, y), input.box.stride_x, input.box.stride_y, {}, {}};
      for (int plane = 0; plane < Planes; ++plane) rows.z_low[plane] = z_low[plane], rows.z_high[plane] = z_high[plane];
      // The whole row, or the lanes the slide left at each end. One call site: each
      // copy of the (forced inline) per-row loop here makes the loop slower, complex128
      // 1.14-1.3x with three of them (`python dev/kernel_ab.py`).
      const std::int64_t pieces[2][2] = {{s.begin, sliding ? s.slide_begin : s.end},
                                         {sliding ? s.slide_end : s.end, s.end}};
      for (const auto& piece : pieces)
        if (piece[0] < piece[1])
          write_rows<Radius, Lanes, Symmetric, Planes, Stream>(s.c.one, four, rows, s.row_lanes, piece[0], piece[1],
                                                               target, prefetch);
      continue;
    }
    RowInputs<Radius, Planes> rows;
    for (int plane = 0; plane < 2 * Radius + Planes; ++plane) rows.along_x[plane] = planes[plane].at(y);
    for (int plane = 0; plane < Planes; ++plane) {
      const std::int64_t x_plane = x + plane;
      const PlaneRows& own = planes[Radius + plane];
      for (int d = 1; d <= Radius; ++d) {
        rows.along_y[plane][d - 1] = row_of_plane(input, s.n, Radius, own, x_plane, y - d);
        rows.along_y[plane][Radius + d - 1] = row_of_plane(input, s.n, Radius, own, x_plane, y + d);
      }
      rows.z_low[plane] = z_low[plane];
      rows.z_high[plane] = z_high[plane];
    }
    write_rows<Radius, Lanes, Symmetric, Planes, Stream>(s.c.one, four, rows, s.row_lanes, s.begin, s.end, target,
                                                         prefetch);
  }
}

// The x-step of slide_in_bands at x (`Planes` planes) over the band's rows
// [y_band, y_stop).
template <int Radius, int Lanes, bool Symmetric, bool Stream, int Planes>
void slide_x_step(const BandSlide<Radius>& s, std::int64_t x, std::int64_t y_band, std::int64_t y_stop) {
  // A copy the compiler can see whole: it then keeps the coefficients in registers
  // through the rows, instead of reading them from memory at every use (it cannot
  // prove the stores to `out` leave the shared object alone).
  const Coefficients<Radius, Vector> four = s.c.four;
  PlaneRows planes[2 * Radius + Planes];
  for (int plane = 0; plane < 2 * Radius + Planes; ++plane)
    planes[plane] = plane_rows(s.input, s.n, Radius, x - Radius + plane);
  PlaneRows ahead[Planes]{};
  const bool prefetching = rows_ahead<Radius, Stream>(s, x, ahead);
  // Rows whose x- and y-neighbours all lie in the box at its strides: y in
  // [y_inside, y_outside); in a padded array every row.
  const std::int64_t ny = s.n[1];
  const bool x_inside = s.padded || (x - Radius >= 0 && x + Planes - 1 + Radius < s.n[0]);
  const std::int64_t y_inside = s.padded ? 0 : x_inside ? Radius : ny;
  const std::int64_t y_outside = s.padded ? ny : x_inside ? ny - Radius : ny;
  const std::int64_t slide_y_begin = std::max(y_band, y_inside), slide_y_end = std::min(y_stop, y_outside);
  // complex128 input from memory slides at 0.77-0.79x the per-row loop's rate
  // (measured interleaved, 32 x 96^3 and 192^3), though 1.1-1.3x in cache; with its
  // output streamed, sliding is the faster again (1.11-1.14x). Whole rows of a
  // prefetched apply (input from memory) all slide apart instead (below), one plane at a
  // time: against the slide at strides, float64 1.01-1.12x from memory (12^3-192^3),
  // complex128 0.98-1.08x, and 0.94-0.95x for float64 in cache, which a prefetched apply
  // does not expect; complex128 against its per-row loop 1.28-1.51x on 12^3-32^3 boxes
  // (`python dev/kernel_ab.py`).
  const bool sliding = s.slide_end - s.slide_begin >= vector_lanes && slide_y_end > slide_y_begin &&
                       (Lanes == 1 || !prefetching || Stream) && !(s.ends && prefetching);
  if (sliding) {
    // A streamed sweep prefetches rows ahead of the row computed, and slide_rows counts
    // rows from slide_y_begin; the step-ahead prefetch takes plane rows as they are.
    PlaneRows from_first[Planes];
    if constexpr (Stream)
      for (int plane = 0; plane < Planes; ++plane)
        from_first[plane] = {ahead[plane].first + slide_y_begin * ahead[plane].stride_y, ahead[plane].stride_y};
    const PlaneRows* prefetch = !prefetching ? nullptr : Stream ? from_first : ahead;
    slide_at_strides<Radius, Lanes, Symmetric, Stream, Planes>(s, x, slide_y_begin, slide_y_end, prefetch);
  }
  // Whole rows that border a ghost slide too, one plane at a time, with a pointer per
  // neighbour row (at 12^3 more than half the rows do), and with prefetching every
  // whole row does (above).
  if (s.ends) {
    for (int plane = 0; plane < Planes; ++plane)
      slide_rows_apart<Radius, Lanes, Symmetric, Stream>(
          four, s.input, s.n, planes + plane, x + plane, y_band, y_stop, sliding ? slide_y_begin : y_stop,
          sliding ? slide_y_end : y_stop, s.out + (x + plane) * s.out_stride_x, prefetching ? ahead + plane : nullptr);
    return;
  }
  // Rows the slide finished whole are skipped (padded arrays: every row).
  write_rows_left<Radius, Lanes, Symmetric, Stream, Planes>(s, four, planes, ahead, prefetching, x, y_band, y_stop,
                                                            sliding, slide_y_begin, slide_y_end, y_inside, y_outside);
}

// The sweep kernel::SweepKind::row_slide: `region` of any BoxInput, its output streamed
// with Stream (the sweep's output_streams), prefetching as the sweep says, in bands
// sized for the L2 or, for input from memory, for the core's share of the last level
// (from_memory_blocking_budget_bytes).
template <int Radius, int Lanes, bool Symmetric, bool Stream>
void slide_in_bands(const kernel::Sweep& choice, const Stencil& stencil, const HaloPlan& plan, const BoxInput& input,
                    const Region& region, double* out) {
  const Index3& n = plan.extent();
  const RowCoefficients<Radius> c(stencil);
  const std::int64_t row_lanes = n[2] * Lanes;
  const std::int64_t begin = region.begin[2] * Lanes, end = (region.begin[2] + region.extent[2]) * Lanes;
  // A padded array: every ghost lies at the box's own strides beyond it, so every row
  // slides, whole (its ghosts beside it, ghost rows around the box). Otherwise whole rows
  // slide with their z ghosts read from where they are (Ends), or, for a region that
  // cuts rows short, rows slide between their ends and the lanes within reach of an end
  // are left to write_rows.
  constexpr int side = sliding_side<Radius, Lanes>;
  const bool ends = !choice.padded && begin == 0 && end == row_lanes && row_lanes >= (2 * side + 1) * vector_lanes;
  const std::int64_t end_lanes = choice.padded || ends ? 0 : side * vector_lanes;
  const BandSlide<Radius> s{.c = c,
                            .input = input,
                            .n = n,
                            .out = out,
                            .row_lanes = row_lanes,
                            .out_stride_x = n[1] * row_lanes,
                            .out_stride_y = row_lanes,
                            .begin = begin,
                            .end = end,
                            .slide_begin = std::max(begin, end_lanes),
                            .slide_end = std::min(end, row_lanes - end_lanes),
                            .x_end = region.begin[0] + region.extent[0],
                            .row_bytes = (row_lanes + 2 * Radius * Lanes) * static_cast<std::int64_t>(sizeof(double)),
                            .padded = choice.padded,
                            .ends = ends,
                            .prefetch_ahead = choice.prefetches,
                            .isotropic = stencil.isotropic()};
  const std::int64_t band =
      band_rows<Radius, Lanes>(choice.input_from_memory ? from_memory_blocking_budget_bytes() : blocking_budget_bytes(),
                               Lanes == 1 ? 2 * Radius + 2 : 2 * Radius + 1, row_lanes);
  const std::int64_t y_end = region.begin[1] + region.extent[1];
  for (std::int64_t y_band = region.begin[1]; y_band < y_end; y_band += band) {
    const std::int64_t y_stop = std::min(y_band + band, y_end);
    std::int64_t x = region.begin[0];
    // Two planes at a time share their x-neighbours' loads (float64); streamed, the two
    // output rows written in turn cost more than that saves (0.76-0.86x measured).
    if constexpr (Lanes == 1 && !Stream)
      for (; x + 2 <= s.x_end; x += 2) slide_x_step<Radius, Lanes, Symmetric, Stream, 2>(s, x, y_band, y_stop);
    for (; x < s.x_end; ++x) slide_x_step<Radius, Lanes, Symmetric, Stream, 1>(s, x, y_band, y_stop);
  }
}

}  // namespace
}  // namespace hybridfd
