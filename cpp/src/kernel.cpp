// The stencil kernel (GPAW journal, Sect. 2.1). One instantiation per radius, lane count
// and symmetry, so offsets are compile-time multiples of the strides. Points
// are computed four lanes at a time with explicit vectors (gcc/clang vector extension,
// 32-byte vectors with -march=native on AVX2: no reliance on the auto-vectoriser) and
// each point is summed exactly in the order of stencil.hpp: no -ffast-math, no FMA
// contraction. (Streaming stores for large outputs were tried: faster in a C++ harness,
// 30 % slower on numpy-allocated outputs here; see the kernel issue.)
#include "hybridfd/kernel.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "format.hpp"
#include "hybridfd/errors.hpp"
#include "hybridfd/thread_team.hpp"

namespace hybridfd {
namespace {

// Four float64 lanes as one value (gcc/clang vector extension). Its arithmetic is
// lane-wise IEEE, so a vector of points sums exactly like each point alone; loads and
// stores go through memcpy (unaligned, no aliasing questions).
using Vector = double __attribute__((vector_size(32)));
constexpr int vector_lanes = 4;

inline Vector load(const double* source) {
  Vector value;
  std::memcpy(&value, source, sizeof value);
  return value;
}

template <class T>
inline T read(const double* source) {
  if constexpr (std::is_same_v<T, Vector>)
    return load(source);
  else
    return *source;
}

// One pair of terms at distance d along an axis, in the documented order: a symmetric
// stencil adds c*(lower + upper) (one multiply fewer, the form Laplacians allow); any
// other adds minus*lower, then plus*upper.
template <bool Symmetric, class T>
inline T add_pair(T sum, T minus, T plus, T lower, T upper) {
  if constexpr (Symmetric) {
    return sum + minus * (lower + upper);
  } else {
    sum += minus * lower;
    return sum + plus * upper;
  }
}

// The coefficients as values of T (double, or a Vector with the coefficient in every
// lane), made once per kernel call: broadcasting inside the loop would cost a load per
// term, and loads, not arithmetic, would then set the pace.
template <int Radius, class T>
struct Coefficients {
  T centre;
  T minus[3][Radius];
  T plus[3][Radius];

  explicit Coefficients(const Stencil& stencil) {
    centre = T{} + stencil.centre;
    for (int axis = 0; axis < 3; ++axis)
      for (int d = 0; d < Radius; ++d)
        minus[axis][d] = T{} + stencil.minus[axis][d], plus[axis][d] = T{} + stencil.plus[axis][d];
  }
};

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

template <int Radius, int Lanes>
[[gnu::always_inline]] inline void load_anchors(const double* centre,
                                                Vector (&anchors)[AnchorsOf<Radius, Lanes>::count]) {
  for (int index = 0; index < AnchorsOf<Radius, Lanes>::count; ++index)
    anchors[index] = load(centre + AnchorsOf<Radius, Lanes>::offset(index));
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

template <int Radius, bool Symmetric>
[[gnu::always_inline]] inline Vector add_y_pairs(const Coefficients<Radius, Vector>& c, Vector sum,
                                                 const double* const* along_y, std::int64_t k) {
#pragma GCC unroll 6
  for (int d = 1; d <= Radius; ++d)
    sum = add_pair<Symmetric, Vector>(sum, c.minus[1][d - 1], c.plus[1][d - 1], load(along_y[d - 1] + k),
                                      load(along_y[Radius + d - 1] + k));
  return sum;
}

// (The helpers of the row loop are forced inline: GCC's heuristics leave the
// two-plane one out of line, and a call per vector costs a third of its time.)

// Four lanes at lane k of two consecutive planes' rows, in the documented order each.
// The planes share their x-neighbours: of the 2r + 2 x-loads, the two centres come from
// the anchors and the other 2r serve both vectors. float64 only (anchors).
template <int Radius, bool Symmetric>
[[gnu::always_inline]] inline void two_plane_values(const Coefficients<Radius, Vector>& c,
                                                    const RowInputs<Radius, 2>& rows, const double* const (&centre)[2],
                                                    std::int64_t k, Vector& first, Vector& second) {
  using Anchors = AnchorsOf<Radius, 1>;
  Vector anchors_first[Anchors::count], anchors_second[Anchors::count];
  load_anchors<Radius, 1>(centre[0], anchors_first);
  load_anchors<Radius, 1>(centre[1], anchors_second);
  Vector along_x[2 * Radius + 2];  // planes x - r .. x + 1 + r
#pragma GCC unroll 14
  for (int plane = 0; plane < 2 * Radius + 2; ++plane)
    if (plane != Radius && plane != Radius + 1) along_x[plane] = load(rows.along_x[plane] + k);
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
  sum_first = add_y_pairs<Radius, Symmetric>(c, sum_first, rows.along_y[0], k);
  sum_second = add_y_pairs<Radius, Symmetric>(c, sum_second, rows.along_y[1], k);
  first = add_z_pairs<Radius, 1, Symmetric>(c, sum_first, anchors_first, std::make_integer_sequence<int, Radius>{});
  second = add_z_pairs<Radius, 1, Symmetric>(c, sum_second, anchors_second, std::make_integer_sequence<int, Radius>{});
}

// Four lanes at lane k of one plane's row, in the documented order (float64: anchors).
template <int Radius, bool Symmetric>
[[gnu::always_inline]] inline Vector one_plane_value(const Coefficients<Radius, Vector>& c,
                                                     const RowInputs<Radius, 1>& rows, const double* centre,
                                                     std::int64_t k) {
  using Anchors = AnchorsOf<Radius, 1>;
  Vector anchors[Anchors::count];
  load_anchors<Radius, 1>(centre, anchors);
  Vector sum = c.centre * anchors[Anchors::centre];
#pragma GCC unroll 6
  for (int d = 1; d <= Radius; ++d)
    sum = add_pair<Symmetric, Vector>(sum, c.minus[0][d - 1], c.plus[0][d - 1], load(rows.along_x[Radius - d] + k),
                                      load(rows.along_x[Radius + d] + k));
  sum = add_y_pairs<Radius, Symmetric>(c, sum, rows.along_y[0], k);
  return add_z_pairs<Radius, 1, Symmetric>(c, sum, anchors, std::make_integer_sequence<int, Radius>{});
}

// Input bytes a band of rows may occupy (a quarter of a 1 MiB L2, leaving room for the
// output and the other streams).
constexpr std::int64_t blocking_budget_bytes = std::int64_t{256} << 10;

// The centre row's lanes [from, to) (box lanes: negative ones and those past row_lanes
// are the ghosts beyond its ends) copied to `target`.
inline void gather_centre(const double* row, const double* z_low, const double* z_high, std::int64_t row_lanes,
                          std::int64_t reach, std::int64_t from, std::int64_t to, double* target) {
  for (std::int64_t lane = from; lane < to; ++lane)
    target[lane - from] = lane < 0 ? z_low[reach + lane] : lane < row_lanes ? row[lane] : z_high[lane - row_lanes];
}

// Writes lanes [begin, end) of the output rows of `Planes` (1 or 2) consecutive x-planes
// with plain stores: whole vectors, the last one overlapping its predecessor when the
// count is not a multiple of four (it writes the same values again); single lanes only
// when the row is shorter than a vector. A vector whose z-neighbours reach past an end
// of the row reads its centre row from a small copy of that end with the ghosts beyond
// it (the rows themselves may be a user's grid, with no room for ghosts). `prefetch`
// rows, if any, are the rows the next x-step will read for the first time, brought
// towards the core a step ahead: from memory the core's prefetchers alone leave the
// kernel waiting (measured: 1.1-1.2x for grids from memory).
template <int Radius, int Lanes, bool Symmetric, int Planes>
[[gnu::always_inline]] inline void write_rows(const Coefficients<Radius, double>& one,
                                              const Coefficients<Radius, Vector>& four,
                                              const RowInputs<Radius, Planes>& rows, std::int64_t row_lanes,
                                              std::int64_t begin, std::int64_t end, double* const (&target)[Planes],
                                              const double* const (&prefetch)[Planes]) {
  constexpr std::int64_t reach = Radius * Lanes;
  const std::int64_t count = end - begin;
  if (count < vector_lanes) {
    for (int plane = 0; plane < Planes; ++plane) {
      double padded[vector_lanes + 2 * reach];
      gather_centre(rows.centre(plane), rows.z_low[plane], rows.z_high[plane], row_lanes, reach, begin - reach,
                    end + reach, padded);
      const double* const* along_x = rows.along_x + plane;  // planes x + plane - r .. x + plane + r
      for (std::int64_t k = begin; k < end; ++k)
        target[plane][k] = point_value<Radius, Lanes, Symmetric, double>(one, padded + reach + (k - begin), along_x,
                                                                         rows.along_y[plane], k);
    }
    return;
  }
  // Ends of the centre rows with their ghosts: lanes [-reach, edge) and [row_lanes - edge,
  // row_lanes + reach), enough for every vector within reach of an end; a row shorter
  // than two such ends is copied whole.
  constexpr std::int64_t edge = 2 * reach + vector_lanes;
  constexpr std::int64_t whole_below = 2 * edge;
  const bool whole = row_lanes < whole_below;
  const std::int64_t high_from = whole ? -reach : row_lanes - edge;
  double low_end[Planes][edge + reach], high_end[Planes][whole_below + 2 * reach];
  const bool low = begin<reach, high = end> row_lanes - reach;
  for (int plane = 0; plane < Planes; ++plane) {
    if (low && !whole)
      gather_centre(rows.centre(plane), rows.z_low[plane], rows.z_high[plane], row_lanes, reach, -reach, edge,
                    low_end[plane]);
    if (high || (low && whole))
      gather_centre(rows.centre(plane), rows.z_low[plane], rows.z_high[plane], row_lanes, reach, high_from,
                    row_lanes + reach, high_end[plane]);
  }
  auto centre = [&](int plane, std::int64_t k) -> const double* {
    if (whole && (low || high)) return high_end[plane] + (k - high_from);
    if (k < reach) return low_end[plane] + (k + reach);
    if (k + vector_lanes + reach > row_lanes) return high_end[plane] + (k - high_from);
    return rows.centre(plane) + k;
  };
  auto write_vector = [&](std::int64_t k) {
    if constexpr (Planes == 2) {
      Vector first, second;
      const double* const centres[2] = {centre(0, k), centre(1, k)};
      two_plane_values<Radius, Symmetric>(four, rows, centres, k, first, second);
      std::memcpy(target[0] + k, &first, sizeof first);
      std::memcpy(target[1] + k, &second, sizeof second);
    } else if constexpr (Lanes == 1) {
      const Vector value = one_plane_value<Radius, Symmetric>(four, rows, centre(0, k), k);
      std::memcpy(target[0] + k, &value, sizeof value);
    } else {
      const Vector value =
          point_value<Radius, Lanes, Symmetric, Vector>(four, centre(0, k), rows.along_x, rows.along_y[0], k);
      std::memcpy(target[0] + k, &value, sizeof value);
    }
  };
  std::int64_t k = begin;
  if (prefetch[0] != nullptr)  // one prefetch per 64-byte line of each row
    for (; k + 2 * vector_lanes <= end; k += 2 * vector_lanes) {
      for (int plane = 0; plane < Planes; ++plane) __builtin_prefetch(prefetch[plane] + k, 0, 3);
      write_vector(k);
      write_vector(k + vector_lanes);
    }
  for (; k + vector_lanes <= end; k += vector_lanes) write_vector(k);
  if (k < end) write_vector(end - vector_lanes);
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

template <int Radius, int Lanes, bool Symmetric>
void apply_star(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                double* out) {
  const Index3& n = plan.extent();
  const std::int64_t row_lanes = n[2] * Lanes;
  const std::int64_t out_stride_y = row_lanes;
  const std::int64_t out_stride_x = n[1] * out_stride_y;
  const RowCoefficients<Radius> c(stencil);
  const std::int64_t begin = region.begin[2] * Lanes, end = (region.begin[2] + region.extent[2]) * Lanes;

  // Rows are visited in bands of y so that the x-planes' rows one band reads (2r+2 for
  // two planes at a time) stay in the core's L2 while x sweeps through them: each input
  // row is then fetched from memory once, not 2r+1 times, also for grids whose planes
  // are too large for L2.
  const std::int64_t row_bytes = (row_lanes + 2 * Radius * Lanes) * static_cast<std::int64_t>(sizeof(double));
  constexpr int planes_read = Lanes == 1 ? 2 * Radius + 2 : 2 * Radius + 1;
  const std::int64_t band = std::max<std::int64_t>(1, blocking_budget_bytes / (planes_read * row_bytes) - 2 * Radius);
  const std::int64_t y_end = region.begin[1] + region.extent[1];
  const std::int64_t x_end = region.begin[0] + region.extent[0];
  for (std::int64_t y_band = region.begin[1]; y_band < y_end; y_band += band) {
    auto sweep = [&]<int Planes>(std::int64_t x) {
      // A copy the compiler can see whole: it then keeps the coefficients in registers
      // through the rows, instead of reading them from memory at every use (it cannot
      // prove the stores to `out` leave the shared object alone).
      const Coefficients<Radius, Vector> four = c.four;
      PlaneRows planes[2 * Radius + Planes];
      for (int plane = 0; plane < 2 * Radius + Planes; ++plane)
        planes[plane] = plane_rows(input, n, Radius, x - Radius + plane);
      // The planes the next step reads first: x + Planes + r onwards, within the input.
      // (Always: an apply's grids come from memory even when each fits a cache, and in
      // cache the prefetches cost 3-5 %.)
      PlaneRows ahead[Planes]{};
      bool prefetching = true;
      for (int plane = 0; plane < Planes; ++plane) {
        const std::int64_t next = x + Planes + Radius + plane;
        prefetching = prefetching && next < n[0] + Radius && next < x_end + Radius;
        if (prefetching) ahead[plane] = plane_rows(input, n, Radius, next);
      }
      for (std::int64_t y = y_band; y < std::min(y_band + band, y_end); ++y) {
        RowInputs<Radius, Planes> rows;
        for (int plane = 0; plane < 2 * Radius + Planes; ++plane) rows.along_x[plane] = planes[plane].at(y);
        double* target[Planes];
        const double* prefetch[Planes];
        for (int plane = 0; plane < Planes; ++plane) {
          const std::int64_t x_plane = x + plane;
          const PlaneRows& own = planes[Radius + plane];
          for (int d = 1; d <= Radius; ++d) {
            rows.along_y[plane][d - 1] = row_of_plane(input, n, Radius, own, x_plane, y - d);
            rows.along_y[plane][Radius + d - 1] = row_of_plane(input, n, Radius, own, x_plane, y + d);
          }
          rows.z_low[plane] = input.z_ghosts[0].at(x_plane, y);
          rows.z_high[plane] = input.z_ghosts[1].at(x_plane, y);
          target[plane] = out + x_plane * out_stride_x + y * out_stride_y;
          prefetch[plane] = prefetching ? ahead[plane].at(y) : nullptr;
        }
        write_rows<Radius, Lanes, Symmetric, Planes>(c.one, four, rows, row_lanes, begin, end, target, prefetch);
      }
    };
    // float64 only: for complex128 a z-neighbour is a whole 16-byte point away, its
    // plain loads split cache lines less often, and the anchors' shuffles (across the
    // vector's 128-bit halves) cost more than they save: 5-15 % slower, measured.
    std::int64_t x = region.begin[0];
    if constexpr (Lanes == 1)
      for (; x + 2 <= x_end; x += 2) sweep.template operator()<2>(x);
    for (; x < x_end; ++x) sweep.template operator()<1>(x);
  }
}

template <int Radius, int Lanes>
void dispatch_symmetry(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                       double* out) {
  if (stencil.symmetric())
    apply_star<Radius, Lanes, true>(stencil, plan, input, region, out);
  else
    apply_star<Radius, Lanes, false>(stencil, plan, input, region, out);
}

template <int Lanes>
void dispatch_radius(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                     double* out) {
  switch (stencil.radius) {
    case 1: return dispatch_symmetry<1, Lanes>(stencil, plan, input, region, out);
    case 2: return dispatch_symmetry<2, Lanes>(stencil, plan, input, region, out);
    case 3: return dispatch_symmetry<3, Lanes>(stencil, plan, input, region, out);
    case 4: return dispatch_symmetry<4, Lanes>(stencil, plan, input, region, out);
    case 5: return dispatch_symmetry<5, Lanes>(stencil, plan, input, region, out);
    case 6: return dispatch_symmetry<6, Lanes>(stencil, plan, input, region, out);
    default: Stencil::check_radius(stencil.radius);
  }
}

ComputeStandIn compute_stand_in = nullptr;

}  // namespace

void set_compute_stand_in(ComputeStandIn stand_in) { compute_stand_in = stand_in; }

void apply_stencil(const Stencil& stencil, const HaloPlan& plan, const BoxInput& input, const Region& region,
                   double* out) {
  if (stencil.radius != plan.radius()) throw ValueError("stencil radius differs from the halo plan's radius");
  if (compute_stand_in != nullptr) [[unlikely]] {
    compute_stand_in(stencil, region.points() * plan.lanes_per_point());
    return;
  }
  if (plan.lanes_per_point() == 2)
    dispatch_radius<2>(stencil, plan, input, region, out);
  else
    dispatch_radius<1>(stencil, plan, input, region, out);
}

BoxInput padded_input(const HaloPlan& plan, const double* padded) {
  const std::int64_t r = plan.radius(), lanes = plan.lanes_per_point();
  const Index3& n = plan.extent();
  const Index3& p = plan.padded_extent();
  const std::int64_t stride_y = p[2] * lanes, stride_x = p[1] * stride_y;
  const auto at = [&](std::int64_t x, std::int64_t y, std::int64_t z) {
    return Rows{padded + x * stride_x + y * stride_y + z * lanes, stride_x, stride_y};
  };
  return {.box = at(r, r, r),
          .x_ghosts = {at(0, r, r), at(n[0] + r, r, r)},
          .y_ghosts = {at(r, 0, r), at(r, n[1] + r, r)},
          .z_ghosts = {at(r, r, 0), at(r, r, n[2] + r)}};
}

void apply_stencil(const Stencil& stencil, const HaloPlan& plan, const double* padded, const Region& region,
                   double* out) {
  apply_stencil(stencil, plan, padded_input(plan, padded), region, out);
}

}  // namespace hybridfd

namespace hybridfd {

void apply_stencil_to_padded(const Stencil& stencil, const ArrayRef& padded, const ArrayRef& out,
                             const std::optional<Region>& region, int threads) {
  Stencil::check_radius(stencil.radius);
  const ScalarType type = scalar_type_from_name(padded.dtype);
  if (out.dtype != padded.dtype)
    throw TypeError(detail::concat("output dtype ", out.dtype, " differs from the padded input's ", padded.dtype));
  if (padded.ndim != 3 || out.ndim != 3)
    throw ValueError(
        detail::concat("padded input and output must be 3-D, got ", padded.ndim, "-D and ", out.ndim, "-D"));
  const std::int64_t item = type == ScalarType::complex128 ? 16 : 8;
  Index3 extent{};
  for (int axis = 0; axis < 3; ++axis) {
    extent[axis] = out.shape[axis];
    if (padded.shape[axis] != extent[axis] + 2 * stencil.radius)
      throw ValueError(detail::concat("padded input has shape ", detail::tuple_text(padded.shape, 3), "; output shape ",
                                      detail::tuple_text(out.shape, 3), " with radius ", stencil.radius,
                                      " needs the output's shape plus ", 2 * stencil.radius, " on every axis"));
  }
  for (const ArrayRef* array : {&padded, &out})
    if (!array->c_contiguous(item))
      throw ValueError(detail::concat(array == &out ? "output" : "padded input", " is not C-contiguous: strides ",
                                      detail::tuple_text(array->strides, 3), " bytes"));
  if (!out.writable) throw ValueError("output array is read-only");
  const HaloPlan plan(extent, stencil.radius, lanes_per_point(type));
  const auto* padded_begin = static_cast<const char*>(padded.data);
  const auto* out_begin = static_cast<const char*>(out.data);
  if (padded_begin < out_begin + plan.grid_lanes() * 8 && out_begin < padded_begin + plan.padded_lanes() * 8)
    throw ValueError("output array overlaps the padded input");
  const Region whole{{0, 0, 0}, extent};
  const Region part = region.value_or(whole);
  for (int axis = 0; axis < 3; ++axis)
    if (part.begin[axis] < 0 || part.extent[axis] < 0 || part.begin[axis] + part.extent[axis] > extent[axis])
      throw ValueError(detail::concat("region at ", detail::tuple_text(part.begin), " of extent ",
                                      detail::tuple_text(part.extent), " is not inside the box ",
                                      detail::tuple_text(extent)));
  const ThreadTeam team(threads);
  const auto* input = static_cast<const double*>(padded.data);
  auto* output = static_cast<double*>(const_cast<void*>(out.data));
  // Each thread its x-slab of the region: rows of whole planes, contiguous in memory.
  auto slab = [&](int thread) {
    Region mine = part;
    mine.begin[0] = part.begin[0] + part.extent[0] * thread / threads;
    mine.extent[0] = part.begin[0] + part.extent[0] * (thread + 1) / threads - mine.begin[0];
    if (mine.points() > 0) apply_stencil(stencil, plan, input, mine, output);
  };
  team.run(slab);
}

}  // namespace hybridfd
