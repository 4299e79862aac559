// pack_rows_quant on AVX2: the same blocks, bit for bit, as the scalar
// version in quant_matmul.cpp, 32 activations at a time. Every step is one
// the scalar code also rounds once: |x| and max are exact, the scale and
// its inverse are the same scalar divisions, x * inverse is one fp32
// multiply, ROUNDPS to nearest even is nearbyint in the default rounding
// mode, and the clamp and the integer sums are exact. A NaN is left out of
// amax and quantizes to 0 on both.
#include <immintrin.h>

#include <cassert>
#include <cstdint>
#include <cstring>

#include "cpu/kernels/quant_matmul.h"

namespace tf::cpu::kernels {

namespace {

// kernels

[[gnu::always_inline]] inline void quantize_block(const float* x, QuantActivationBlock& block) {
    const __m256 sign_off = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
        v[i] = _mm256_loadu_ps(x + 8 * i);
        amax = _mm256_max_ps(_mm256_and_ps(v[i], sign_off), amax);  // a NaN lane keeps amax
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, amax);
    float top = 0.0f;
    for (float lane : lanes) top = lane > top ? lane : top;
    block.d = top / 127.0f;
    const __m256 inverse = _mm256_set1_ps(top > 0.0f ? 127.0f / top : 0.0f);
    const __m256 low = _mm256_set1_ps(-127.0f), high = _mm256_set1_ps(127.0f);
    __m256i q32[4];
    for (int i = 0; i < 4; ++i) {
        const __m256 scaled = _mm256_mul_ps(v[i], inverse);
        const __m256 nan = _mm256_cmp_ps(scaled, scaled, _CMP_UNORD_Q);
        __m256 r = _mm256_round_ps(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r = _mm256_min_ps(_mm256_max_ps(r, low), high);
        q32[i] = _mm256_cvtps_epi32(_mm256_andnot_ps(nan, r));
    }
    // int32 -> int8 (exact: |q| <= 127), then undo PACKS' lane interleave.
    const __m256i words = _mm256_packs_epi16(_mm256_packs_epi32(q32[0], q32[1]), _mm256_packs_epi32(q32[2], q32[3]));
    const __m256i q = _mm256_permutevar8x32_epi32(words, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(block.q), q);
    // Sums of each 4 consecutive q's: quad j is in sub-block of 16 j / 4.
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
    int32_t quad[8];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(quad), _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    const int32_t sums[2] = {quad[0] + quad[1] + quad[2] + quad[3], quad[4] + quad[5] + quad[6] + quad[7]};
    finish_activation_block(block, sums);
}

}  // namespace

// launchers

void pack_rows_quant_avx2(const float* x, int32_t rows, int32_t k, int32_t ldx, void* packed) {
    // A lambda rather than the function's address, so the block's code is
    // inlined into the loop: called through the pointer, each block of 32
    // paid a call and a VZEROUPPER, which perf put at two thirds of the
    // packing time of a 16-row forward.
    pack_activation_blocks(x, rows, k, ldx, packed,
                           [](const float* x32, QuantActivationBlock& block)
                               __attribute__((always_inline)) { quantize_block(x32, block); });
}

}  // namespace tf::cpu::kernels
