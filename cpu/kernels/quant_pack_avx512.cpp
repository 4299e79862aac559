// pack_rows_quant on AVX-512 (F, BW, VL and DQ, as the avx512 path): the blocks of the scalar
// version, bit for bit, a block of 32 activations in two zmm. Each step is
// one the scalar code rounds the same way or not at all: |x| and the
// maximum are exact (whatever order the lanes meet in, as no lane is NaN),
// d and the inverse are the same scalar divisions, x * inverse is one fp32
// multiply, VRNDSCALEPS to nearest even is nearbyint in the default
// rounding mode, and the clamp, the narrowing (|q| <= 127) and the integer
// sums are exact. A NaN is left out of amax and quantizes to 0, as there.
// Unlike the AVX2 version it stores and reloads no lanes for the maximum
// and the sums and narrows 16 int32 at once: 1.5x the blocks a second on
// Zen 5 (bench-dot's packing table).
#include <immintrin.h>

#include <cstdint>

#include "cpu/kernels/quant_matmul.h"

namespace tf::cpu::kernels {

namespace {

// The maskz forms with every lane set stand in for the unmasked intrinsics
// that trip GCC 12's -Wuninitialized (as in vec16_avx512.h).
constexpr __mmask16 kAll = 0xFFFF;

// The sum of a vector's 16 int32 lanes (exact, any order).
inline int32_t lane_sum(__m512i v) {
    const __m256i half =
        _mm256_add_epi32(_mm512_maskz_extracti32x8_epi32(0xFF, v, 0), _mm512_maskz_extracti32x8_epi32(0xFF, v, 1));
    __m128i quarter = _mm_add_epi32(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
    quarter = _mm_add_epi32(quarter, _mm_unpackhi_epi64(quarter, quarter));
    quarter = _mm_add_epi32(quarter, _mm_shuffle_epi32(quarter, 1));
    return _mm_cvtsi128_si32(quarter);
}

// kernels

[[gnu::always_inline]] inline void quantize_block(const float* x, QuantActivationBlock& block) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    // max(|v|, amax) keeps amax where |v| is NaN (MAXPS returns its second
    // operand when either is NaN), as the scalar loop skips NaN.
    __m512 amax = _mm512_maskz_max_ps(kAll, _mm512_abs_ps(v0), _mm512_setzero_ps());
    amax = _mm512_maskz_max_ps(kAll, _mm512_abs_ps(v1), amax);
    __m256 half =
        _mm256_max_ps(_mm512_maskz_extractf32x8_ps(0xFF, amax, 0), _mm512_maskz_extractf32x8_ps(0xFF, amax, 1));
    __m128 quarter = _mm_max_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
    quarter = _mm_max_ps(quarter, _mm_movehl_ps(quarter, quarter));
    quarter = _mm_max_ss(quarter, _mm_movehdup_ps(quarter));
    const float top = _mm_cvtss_f32(quarter);
    block.d = top / 127.0f;
    const __m512 inverse = _mm512_set1_ps(top > 0.0f ? 127.0f / top : 0.0f);
    const __m512 low = _mm512_set1_ps(-127.0f), high = _mm512_set1_ps(127.0f);
    __m512i q32[2];
    const __m512 v[2] = {v0, v1};
    for (int i = 0; i < 2; ++i) {
        const __m512 scaled = _mm512_maskz_mul_ps(kAll, v[i], inverse);
        const __mmask16 number = _mm512_cmp_ps_mask(scaled, scaled, _CMP_ORD_Q);
        __m512 r = _mm512_maskz_roundscale_ps(kAll, scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r = _mm512_maskz_min_ps(kAll, _mm512_maskz_max_ps(kAll, r, low), high);
        q32[i] = _mm512_maskz_cvtps_epi32(number, r);  // NaN lanes: 0
    }
    const __m128i q0 = _mm512_maskz_cvtepi32_epi8(kAll, q32[0]), q1 = _mm512_maskz_cvtepi32_epi8(kAll, q32[1]);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(block.q), q0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(block.q + 16), q1);
    // Each sub-block of 16 is one of the two vectors.
    const int32_t sums[2] = {lane_sum(q32[0]), lane_sum(q32[1])};
    finish_activation_block(block, sums);
}

}  // namespace

// launchers

void pack_rows_quant_avx512(const float* x, int32_t rows, int32_t k, int32_t ldx, void* packed) {
    // A lambda, so that the block's code is inlined into the loop (see the
    // AVX2 version).
    pack_activation_blocks(x, rows, k, ldx, packed,
                           [](const float* x32, QuantActivationBlock& block)
                               __attribute__((always_inline)) { quantize_block(x32, block); });
}

}  // namespace tf::cpu::kernels
