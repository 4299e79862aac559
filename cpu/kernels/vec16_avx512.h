// The 16-lane vector as one AVX-512 register. Same lanes, same FMA, same
// reduction tree as the scalar and AVX2 paths: bit-identical results.
// Included only by kernels_avx512.cpp (compiled with -mavx512f -mavx512bw ...).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace tf::cpu::kernels::avx512 {

struct V16 {
    __m512 v;
};

// The maskz forms with every lane set: GCC 12.2's unmasked intrinsics pass
// an undefined vector that trips -Wuninitialized (GCC bug 105593).
constexpr __mmask16 kAll = 0xFFFF;

inline V16 zero16() { return {_mm512_setzero_ps()}; }
inline V16 load16(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void store16(float* p, const V16& v) { _mm512_storeu_ps(p, v.v); }
// 16 KV cache elements of 16 bits, widened to fp32 exactly (kv_format.h).
inline V16 load16_f16(const uint16_t* p) {
    return {_mm512_maskz_cvtph_ps(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}
inline V16 load16_bf16(const uint16_t* p) {
    const __m512i a = _mm512_maskz_cvtepu16_epi32(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return {_mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, a, 16))};
}
// 16 int8 as fp32 (exact).
inline V16 load16_i8(const int8_t* p) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return {_mm512_maskz_cvtepi32_ps(kAll, _mm512_maskz_cvtepi8_epi32(kAll, bytes))};
}
inline V16 broadcast16(float x) { return {_mm512_set1_ps(x)}; }
inline V16 fma16(const V16& a, const V16& b, const V16& c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
inline void load_bf16_pairs(const uint16_t* w, V16& even, V16& odd) {
    __m512i a = _mm512_loadu_si512(w);
    even = {_mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, a, 16))};
    odd = {_mm512_castsi512_ps(_mm512_and_si512(a, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))))};
}
inline float reduce16(const V16& v) {
    const __m512d d = _mm512_castps_pd(v.v);
    const __m256 lo = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, d, 0));
    const __m256 hi = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, d, 1));
    __m256 t8 = _mm256_add_ps(lo, hi);  // i + (i+8)
    __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
    __m128 t1 = _mm_add_ss(t2, _mm_movehdup_ps(t2));
    return _mm_cvtss_f32(t1);
}
// reduce16 of 16 vectors at once, sums[i] = reduce16(v[i]) bit for bit:
// each level adds the very pairs reduce16's tree adds (i + i+8, then
// i + i+4, i + i+2, i + i+1), only for several vectors per instruction, so
// a tile pays 15 adds and 30 shuffles instead of 16 full reductions.
inline void reduce16x16(const V16* v, float* sums) {
    __m512 t[8], u[4], w[2];
    for (int j = 0; j < 8; ++j) {  // t[j]: lanes 0-7 of v[2j] + lanes 8-15, then the same for v[2j+1]
        const __m512 a = v[2 * j].v, b = v[2 * j + 1].v;
        t[j] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(kAll, a, b, 0x44), _mm512_maskz_shuffle_f32x4(kAll, a, b, 0xEE));
    }
    for (int j = 0; j < 4; ++j) {  // quarter q of u[j]: the 4 partials of v[4j+q]
        const __m512 a = t[2 * j], b = t[2 * j + 1];
        u[j] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(kAll, a, b, 0x88), _mm512_maskz_shuffle_f32x4(kAll, a, b, 0xDD));
    }
    for (int k = 0; k < 2; ++k) {  // quarter q of w[k]: 2 partials of v[8k+q], then of v[8k+4+q]
        const __m512 a = u[2 * k], b = u[2 * k + 1];
        w[k] = _mm512_add_ps(_mm512_maskz_shuffle_ps(kAll, a, b, 0x44), _mm512_maskz_shuffle_ps(kAll, a, b, 0xEE));
    }
    // Lane 4q+e of r holds the sum of v[4e+q]; the permute puts v[i]'s at i.
    const __m512 r = _mm512_add_ps(_mm512_maskz_shuffle_ps(kAll, w[0], w[1], 0x88), _mm512_maskz_shuffle_ps(kAll, w[0], w[1], 0xDD));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_ps(sums, _mm512_maskz_permutexvar_ps(kAll, order, r));
}

// bf16 dot ops: 32 bf16 values as they lie in memory, and the VDPBF16PS
// step on them. kernels_avx512_bf16.cpp runs the instruction itself;
// kernels_avx512.cpp runs dot_pairs_emulated, which equals it bit for bit
// (odd product first, each FMA rounded once, subnormal inputs and results
// flushed to signed zero) and equals the scalar and avx2 emulations.
struct P32 {
    __m512i v;
};
inline P32 loadp32(const uint16_t* p) { return {_mm512_loadu_si512(p)}; }
inline __m512 flush_subnormal(__m512 x) {
    const __m512i bits = _mm512_castps_si512(x);
    const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
    const __mmask16 tiny = _mm512_cmp_ps_mask(_mm512_castsi512_ps(_mm512_maskz_andnot_epi32(kAll, sign, bits)),
                                              _mm512_set1_ps(0x1p-126f), _CMP_LT_OQ);
    return _mm512_castsi512_ps(_mm512_mask_and_epi32(bits, tiny, bits, sign));
}
inline void unpack_pairs(const P32& p, V16& even, V16& odd) {
    even = {flush_subnormal(_mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, p.v, 16)))};
    odd = {flush_subnormal(
        _mm512_castsi512_ps(_mm512_maskz_and_epi32(kAll, p.v, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)))))};
}
inline V16 dot_pairs_emulated(const V16& acc, const P32& x, const P32& w) {
    V16 xe, xo, we, wo;
    unpack_pairs(x, xe, xo);
    unpack_pairs(w, we, wo);
    const __m512 odd = flush_subnormal(_mm512_fmadd_ps(xo.v, wo.v, acc.v));
    return {flush_subnormal(_mm512_fmadd_ps(xe.v, we.v, odd))};
}

// attention ops: the scalar path's, lane for lane (VMAXPS/VMINPS return the
// second operand unless the first compares greater/less, as there).
inline V16 add16(const V16& a, const V16& b) { return {_mm512_add_ps(a.v, b.v)}; }
inline V16 sub16(const V16& a, const V16& b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline V16 mul16(const V16& a, const V16& b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline V16 div16(const V16& a, const V16& b) { return {_mm512_div_ps(a.v, b.v)}; }
inline V16 max16(const V16& a, const V16& b) { return {_mm512_maskz_max_ps(kAll, a.v, b.v)}; }
inline V16 min16(const V16& a, const V16& b) { return {_mm512_maskz_min_ps(kAll, a.v, b.v)}; }
inline float max_lane16(const V16& v) {
    const __m512d d = _mm512_castps_pd(v.v);
    const __m256 lo = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, d, 0));
    const __m256 hi = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, d, 1));
    __m256 t8 = _mm256_max_ps(lo, hi);
    __m128 t4 = _mm_max_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    __m128 t2 = _mm_max_ps(t4, _mm_movehl_ps(t4, t4));
    __m128 t1 = _mm_max_ss(t2, _mm_movehdup_ps(t2));
    return _mm_cvtss_f32(t1);
}
inline V16 keep_lanes16(const V16& v, int32_t lo, int32_t hi, float fill) {
    const auto keep = static_cast<__mmask16>(((1u << hi) - 1u) & ~((1u << lo) - 1u));
    return {_mm512_mask_blend_ps(keep, _mm512_set1_ps(fill), v.v)};
}
inline V16 scale_pow2_16(const V16& p, const V16& n) {
    const __m512i k = _mm512_maskz_cvttps_epi32(kAll, n.v), bias = _mm512_set1_epi32(127);
    const __m512i k1 = _mm512_maskz_srai_epi32(kAll, k, 1), k2 = _mm512_sub_epi32(k, k1);
    const __m512 s1 = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_add_epi32(k1, bias), 23));
    const __m512 s2 = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_add_epi32(k2, bias), 23));
    return {_mm512_mul_ps(_mm512_mul_ps(p.v, s1), s2)};
}
// A V16 is one zmm: a single lane group (see vec16_avx2.h).
constexpr int kLaneGroups = 1;
using LaneGroup = __m512;
inline LaneGroup zero_group() { return _mm512_setzero_ps(); }
inline LaneGroup load_group(const float* p) { return _mm512_loadu_ps(p); }
inline LaneGroup fma_group(LaneGroup a, LaneGroup b, LaneGroup c) { return _mm512_fmadd_ps(a, b, c); }
inline void store_group(float* p, LaneGroup x) { _mm512_storeu_ps(p, x); }
inline LaneGroup get_group(const V16& v, int) { return v.v; }
// Attention's accumulators in flight: 24 of the 32 zmm registers, the
// rest for the broadcast queries or softmax weights and the loaded keys or
// values.
constexpr int kAttentionAccumulators = 24;

}  // namespace tf::cpu::kernels::avx512
