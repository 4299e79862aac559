// The 16-lane vector as one AVX-512 register. Same lanes, same FMA, same
// reduction tree as the scalar and AVX2 paths: bit-identical results.
// Included only by kernels_avx512.cpp (compiled with -mavx512f -mavx512bw ...).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace tf::model::kernels::avx512 {

struct V16 {
    __m512 v;
};

// The maskz forms with every lane set: GCC 12.2's unmasked intrinsics pass
// an undefined vector that trips -Wuninitialized (GCC bug 105593).
constexpr __mmask16 kAll = 0xFFFF;

inline V16 zero16() { return {_mm512_setzero_ps()}; }
inline V16 load16(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void store16(float* p, const V16& v) { _mm512_storeu_ps(p, v.v); }
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

}  // namespace tf::model::kernels::avx512
