// The widest vector of float64 lanes the build has: 8 lanes (512 bits) with AVX-512, 4
// lanes (256 bits) with AVX2. The sweeps of column_sweep.hpp and streamed_planes.hpp are
// written once against it, so a cluster of either kind runs the same code, summed in the
// same order: beyond lane-wise + and *, they need loads and stores of the first or last
// lanes only (a region's last vector, the z-neighbours beside a vector), the window of
// lanes between two vectors (a point's z-neighbours), and stores past the caches.
//
// Masked loads never touch a masked-off lane's memory (AVX-512 masks, AVX2's vmaskmovpd:
// neither faults on, nor reads, a lane it leaves out), which is what lets a sweep read
// only the points the stencil needs at a region's end.
#pragma once

#if defined(__AVX512F__) || defined(__AVX2__)
#define HYBRIDFD_WIDE_VECTOR 1
#include <immintrin.h>

#include <bit>
#include <cstdint>

// Internal linkage, as column_sweep.hpp says why.
namespace hybridfd {
namespace {
namespace wide {

#if defined(__AVX512F__)

// A gcc/clang vector type: + and * are lane-wise IEEE (the same type as __m512d without
// its may_alias, which a template argument would drop).
using Vector = double __attribute__((vector_size(64)));
using Mask = __mmask8;
constexpr int lanes = 8;

// Lanes 0 .. count - 1 (none for count <= 0, all for count >= 8).
inline Mask first_lanes(std::int64_t count) {
  return static_cast<Mask>(count >= lanes ? 0xffu : count <= 0 ? 0u : (1u << count) - 1);
}
// Lanes 8 - count .. 7, for 1 <= count <= 8.
inline Mask last_lanes(int count) { return static_cast<Mask>(0xffu << (lanes - count)); }
inline int count(Mask mask) { return std::popcount(static_cast<unsigned>(mask)); }

inline Vector load(const double* source) { return _mm512_loadu_pd(source); }
inline Vector load(const double* source, Mask mask) { return _mm512_maskz_loadu_pd(mask, source); }
inline void store(double* target, Vector value) { _mm512_storeu_pd(target, value); }
inline void store(double* target, Mask mask, Vector value) { _mm512_mask_storeu_pd(target, mask, value); }

// align's shifts 1 .. 7: one `valignq`. (Through the zero-masked form with every lane
// kept: the plain intrinsic trips GCC 12's -Wmaybe-uninitialized on its undefined
// pass-through operand; a generic shuffle compiles to vpermt2pd, which needs an index
// register per offset.)
template <int Shift>
[[gnu::always_inline]] inline Vector shift_lanes(Vector upper, Vector lower) {
  return _mm512_castsi512_pd(
      _mm512_maskz_alignr_epi64(0xff, _mm512_castpd_si512(upper), _mm512_castpd_si512(lower), Shift));
}

// Stores past the caches: at a 64-byte aligned address, and at a 16-byte aligned one in
// the widest pieces it allows.
inline void stream_aligned(double* target, Vector value) { _mm512_stream_pd(target, value); }
inline void stream_pieces(double* target, Vector value) {
  // (Zero-masked extracts with every lane kept, as in align.)
  const __m256d lower = _mm512_maskz_extractf64x4_pd(0xff, value, 0);
  const __m256d upper = _mm512_maskz_extractf64x4_pd(0xff, value, 1);
  if (reinterpret_cast<std::uintptr_t>(target) % 32 == 0) {
    _mm256_stream_pd(target, lower);
    _mm256_stream_pd(target + 4, upper);
  } else {
    _mm_stream_pd(target, _mm256_castpd256_pd128(lower));
    _mm_stream_pd(target + 2, _mm256_extractf128_pd(lower, 1));
    _mm_stream_pd(target + 4, _mm256_castpd256_pd128(upper));
    _mm_stream_pd(target + 6, _mm256_extractf128_pd(upper, 1));
  }
}

#else  // AVX2

using Vector = double __attribute__((vector_size(32)));
// A lane is live where its 64 bits are all ones (vmaskmovpd reads the sign bit).
using Mask = __m256i;
constexpr int lanes = 4;

inline Mask first_lanes(std::int64_t count) {
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(count), _mm256_setr_epi64x(0, 1, 2, 3));
}
inline Mask last_lanes(int count) {
  return _mm256_cmpgt_epi64(_mm256_setr_epi64x(0, 1, 2, 3), _mm256_set1_epi64x(lanes - 1 - count));
}
inline int count(Mask mask) {
  return std::popcount(static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(mask))));
}

inline Vector load(const double* source) { return _mm256_loadu_pd(source); }
inline Vector load(const double* source, Mask mask) { return _mm256_maskload_pd(source, mask); }
inline void store(double* target, Vector value) { _mm256_storeu_pd(target, value); }
inline void store(double* target, Mask mask, Vector value) { _mm256_maskstore_pd(target, mask, value); }

// align's shifts 1 .. 3: a vperm2f128, and a vshufpd for an odd shift.
template <int Shift>
[[gnu::always_inline]] inline Vector shift_lanes(Vector upper, Vector lower) {
  return __builtin_shufflevector(lower, upper, Shift, Shift + 1, Shift + 2, Shift + 3);
}

inline void stream_aligned(double* target, Vector value) { _mm256_stream_pd(target, value); }
inline void stream_pieces(double* target, Vector value) {
  _mm_stream_pd(target, _mm256_castpd256_pd128(value));
  _mm_stream_pd(target + 2, _mm256_extractf128_pd(value, 1));
}

#endif

inline bool all_lanes(Mask mask) { return count(mask) == lanes; }

// Lanes Shift .. Shift + lanes - 1 of the 2 x lanes lanes of `lower` then `upper`
// (0 <= Shift <= lanes).
template <int Shift>
[[gnu::always_inline]] inline Vector align(Vector upper, Vector lower) {
  if constexpr (Shift == 0)
    return lower;
  else if constexpr (Shift == lanes)
    return upper;
  else
    return shift_lanes<Shift>(upper, lower);
}

}  // namespace wide
}  // namespace
}  // namespace hybridfd
#endif
