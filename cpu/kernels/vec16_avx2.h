// The 16-lane vector as two AVX2 registers: lo = lanes 0..7, hi = lanes 8..15.
// Every operation is lane-wise the scalar one (FMA rounds once), and
// reduce16 adds in the same tree, so results equal the scalar path bitwise.
// Included only by kernels_avx2.cpp (compiled with -mavx2 -mfma).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace tf::cpu::kernels::avx2 {

struct V16 {
    __m256 lo, hi;
};

inline V16 zero16() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline V16 load16(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline void store16(float* p, const V16& v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
}
// 16 KV cache elements of 16 bits, widened to fp32 exactly (kv_format.h).
inline V16 load16_f16(const uint16_t* p) {
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
}
inline V16 load16_bf16(const uint16_t* p) {
    const __m256i a = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i b = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
    return {_mm256_castsi256_ps(_mm256_slli_epi32(a, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(b, 16))};
}
// 16 int8 as fp32 (exact).
inline V16 load16_i8(const int8_t* p) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)),
            _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(bytes, 8)))};
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

// attention ops: the scalar path's, lane for lane (MAXPS/MINPS return the
// second operand unless the first compares greater/less, as there).
inline V16 add16(const V16& a, const V16& b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
inline V16 sub16(const V16& a, const V16& b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
inline V16 mul16(const V16& a, const V16& b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
inline V16 div16(const V16& a, const V16& b) { return {_mm256_div_ps(a.lo, b.lo), _mm256_div_ps(a.hi, b.hi)}; }
inline V16 max16(const V16& a, const V16& b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
inline V16 min16(const V16& a, const V16& b) { return {_mm256_min_ps(a.lo, b.lo), _mm256_min_ps(a.hi, b.hi)}; }
inline float max_lane16(const V16& v) {
    __m256 t8 = _mm256_max_ps(v.lo, v.hi);
    __m128 t4 = _mm_max_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    __m128 t2 = _mm_max_ps(t4, _mm_movehl_ps(t4, t4));
    __m128 t1 = _mm_max_ss(t2, _mm_movehdup_ps(t2));
    return _mm_cvtss_f32(t1);
}
inline V16 keep_lanes16(const V16& v, int32_t lo, int32_t hi, float fill) {
    const __m256i index_lo = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i index_hi = _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15);
    const __m256i below = _mm256_set1_epi32(lo - 1), end = _mm256_set1_epi32(hi);
    // lo - 1 < i and i < hi, as all-ones lanes
    const __m256 in_lo = _mm256_castsi256_ps(
        _mm256_and_si256(_mm256_cmpgt_epi32(index_lo, below), _mm256_cmpgt_epi32(end, index_lo)));
    const __m256 in_hi = _mm256_castsi256_ps(
        _mm256_and_si256(_mm256_cmpgt_epi32(index_hi, below), _mm256_cmpgt_epi32(end, index_hi)));
    const __m256 f = _mm256_set1_ps(fill);
    return {_mm256_blendv_ps(f, v.lo, in_lo), _mm256_blendv_ps(f, v.hi, in_hi)};
}
inline __m256 scale_pow2_8(__m256 p, __m256 n) {
    const __m256i k = _mm256_cvttps_epi32(n), bias = _mm256_set1_epi32(127);
    const __m256i k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}
inline V16 scale_pow2_16(const V16& p, const V16& n) { return {scale_pow2_8(p.lo, n.lo), scale_pow2_8(p.hi, n.hi)}; }
// A V16 as lane groups, one ymm each. No matmul product crosses from lanes
// 0..7 to 8..15, so a kernel may walk K once per group and hold half the
// accumulators a tile of whole V16s would.
constexpr int kLaneGroups = 2;
using LaneGroup = __m256;
inline LaneGroup zero_group() { return _mm256_setzero_ps(); }
inline LaneGroup load_group(const float* p) { return _mm256_loadu_ps(p); }
inline LaneGroup fma_group(LaneGroup a, LaneGroup b, LaneGroup c) { return _mm256_fmadd_ps(a, b, c); }
inline void store_group(float* p, LaneGroup x) { _mm256_storeu_ps(p, x); }
inline LaneGroup get_group(const V16& v, int g) { return g == 0 ? v.lo : v.hi; }
// Attention's accumulators in flight: 12 of the 16 ymm registers.
constexpr int kAttentionAccumulators = 6;

}  // namespace tf::cpu::kernels::avx2
