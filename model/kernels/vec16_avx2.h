// The 16-lane vector as two AVX2 registers: lo = lanes 0..7, hi = lanes 8..15.
// Every operation is lane-wise the scalar one (FMA rounds once), and
// reduce16 adds in the same tree, so results equal the scalar path bitwise.
// Included only by kernels_avx2.cpp (compiled with -mavx2 -mfma).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace tf::model::kernels::avx2 {

struct V16 {
    __m256 lo, hi;
};

inline V16 zero16() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline V16 load16(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline void store16(float* p, const V16& v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
}
inline V16 broadcast16(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
inline V16 fma16(const V16& a, const V16& b, const V16& c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
// bf16 -> fp32 is a 16-bit shift: each 32-bit word holds an (even, odd) pair;
// the even value is its low half (shift it up), the odd its high half (mask).
inline void load_bf16_pairs(const uint16_t* w, V16& even, V16& odd) {
    const __m256i mask = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16));
    even = {_mm256_castsi256_ps(_mm256_slli_epi32(a, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(b, 16))};
    odd = {_mm256_castsi256_ps(_mm256_and_si256(a, mask)), _mm256_castsi256_ps(_mm256_and_si256(b, mask))};
}
inline float reduce16(const V16& v) {
    __m256 t8 = _mm256_add_ps(v.lo, v.hi);                                            // i + (i+8)
    __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));  // i + (i+4)
    __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));                                // i + (i+2)
    __m128 t1 = _mm_add_ss(t2, _mm_movehdup_ps(t2));                                  // 0 + 1
    return _mm_cvtss_f32(t1);
}
// reduce16 of 16 vectors: sums[i] = reduce16(v[i]).
inline void reduce16x16(const V16* v, float* sums) {
    for (int i = 0; i < 16; ++i) sums[i] = reduce16(v[i]);
}

// bf16 dot ops: 32 bf16 values as they lie in memory, and the VDPBF16PS step
// on them, emulated exactly as the scalar path does (odd product first, each
// FMA rounded once, subnormal inputs and results flushed to signed zero).
struct P32 {
    __m256i lo, hi;  // pairs 0..7, 8..15
};
inline P32 loadp32(const uint16_t* p) {
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16))};
}
inline __m256 flush_subnormal(__m256 x) {
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
    const __m256 tiny = _mm256_cmp_ps(_mm256_andnot_ps(sign, x), _mm256_set1_ps(0x1p-126f), _CMP_LT_OQ);
    return _mm256_blendv_ps(x, _mm256_and_ps(x, sign), tiny);
}
inline void unpack_pairs(const P32& p, V16& even, V16& odd) {
    const __m256i mask = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    even = {flush_subnormal(_mm256_castsi256_ps(_mm256_slli_epi32(p.lo, 16))),
            flush_subnormal(_mm256_castsi256_ps(_mm256_slli_epi32(p.hi, 16)))};
    odd = {flush_subnormal(_mm256_castsi256_ps(_mm256_and_si256(p.lo, mask))),
           flush_subnormal(_mm256_castsi256_ps(_mm256_and_si256(p.hi, mask)))};
}
inline V16 dot_pairs(const V16& acc, const P32& x, const P32& w) {
    V16 xe, xo, we, wo;
    unpack_pairs(x, xe, xo);
    unpack_pairs(w, we, wo);
    const __m256 lo = flush_subnormal(_mm256_fmadd_ps(xo.lo, wo.lo, acc.lo));
    const __m256 hi = flush_subnormal(_mm256_fmadd_ps(xo.hi, wo.hi, acc.hi));
    return {flush_subnormal(_mm256_fmadd_ps(xe.lo, we.lo, lo)), flush_subnormal(_mm256_fmadd_ps(xe.hi, we.hi, hi))};
}

}  // namespace tf::model::kernels::avx2
