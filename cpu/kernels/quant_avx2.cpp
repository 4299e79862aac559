// The avx2 path of the quantized matmul without VNNI: the u8 x s8 4-way dot
// as VPMADDUBSW + VPMADDWD, exact for every format here.
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <memory>

#include "cpu/kernels/quant_matmul.h"
#include "cpu/kernels/vec16_avx2.h"

namespace tf::cpu::kernels::quant_avx2 {

namespace {

using namespace avx2;  // V16 and its operations

#include "cpu/kernels/quant_ops_avx2.inc"

// Activation rows per pass over a tile (two ymm per accumulator). 4 rows
// and q8_0 groups outside the rows measured best on every format with 16
// ymm registers (bench-dot, 3072 x 1024, one thread: q8_0 116 -> 132 GOP/s,
// q4_k 134 -> 146, q6_k 101 -> 112; q4_0 is no faster with its groups
// outside, so it keeps the rows outside).
constexpr int kTiledRows = 4, kTiledTiles = 1;
// Whether q8_0's tiles loop over the weight groups outside the rows
// (quant_tiled_impl.inc, run_group_outer).
constexpr bool kQ8GroupOuter = true;
constexpr bool kNibbleGroupOuter = false;  // the same for q4_0 and q5_0

inline __m256i dot8(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}
inline I32 dot_u8s8(const I32& acc, const I8& u, const I8& s) { return {dot8(acc.lo, u.lo, s.lo), dot8(acc.hi, u.hi, s.hi)}; }
// q8_0's stored q+128 would overflow VPMADDUBSW's int16 pairs: back to
// q = stored ^ 0x80, then |q| times x with q's sign (VPSIGNB), no bias;
// 128 * 127 * 2 fits int16.
constexpr bool kQ8Bias = false;
inline I32 dot_q8(const I32& acc, const I8& u, const I8& x) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    const __m256i q_lo = _mm256_xor_si256(u.lo, flip), q_hi = _mm256_xor_si256(u.hi, flip);
    return dot_u8s8(acc, {_mm256_abs_epi8(q_lo), _mm256_abs_epi8(q_hi)},
                    {_mm256_sign_epi8(x.lo, q_lo), _mm256_sign_epi8(x.hi, q_hi)});
}

// Small weights (nibbles, q6_k's 6 bits) against activations of at most 127
// in magnitude: a VPMADDUBSW pair is at most 2 * (2^kBits - 1) * 127, so
// 8 nibble pairs (30,480) or 2 six-bit pairs (32,004) add up in int16
// without overflow, and one VPMADDWD widens their exact sum. That halves
// the multiply uops of q4_0 and q4_k against a VPMADDWD per group.
constexpr bool kSmallSumsInInt16 = true;
constexpr bool kDotBroadcastsFromMemory = false;
template <int kBits, int N>
inline I32 small_dot_groups(I32 acc, const I8* w, const int8_t* x) {
    constexpr int kChunk = 32767 / (2 * ((1 << kBits) - 1) * 127);
    static_assert(kChunk >= 2);
    const __m256i ones = _mm256_set1_epi16(1);
    #pragma GCC unroll 8
    for (int g0 = 0; g0 < N; g0 += kChunk) {
        const __m256i x0 = _mm256_set1_epi32(four_bytes(x + 4 * g0));
        __m256i lo = _mm256_maddubs_epi16(w[g0].lo, x0), hi = _mm256_maddubs_epi16(w[g0].hi, x0);
        for (int g = g0 + 1; g < std::min(N, g0 + kChunk); ++g) {
            const __m256i xg = _mm256_set1_epi32(four_bytes(x + 4 * g));
            lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(w[g].lo, xg));
            hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(w[g].hi, xg));
        }
        acc = {_mm256_add_epi32(acc.lo, _mm256_madd_epi16(lo, ones)), _mm256_add_epi32(acc.hi, _mm256_madd_epi16(hi, ones))};
    }
    return acc;
}

// One row at a time (quant_tiled_impl.inc, paired_dot_groups): the paths
// that sum small weights in int16 gain nothing from pairing (q4_k_m 16 rows
// on avx2 went 90 -> 104 ms with it), 16-register paths have no room for
// it, and the scalar reference needs no speed.
constexpr int kRowsInterleaved = 1;

#include "cpu/kernels/quant_tiled_impl.inc"

}  // namespace

void matmul(const void* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end, float* out,
            int32_t ldo) {
    quant_matmul_any(xs, M, w, n_begin, n_end, out, ldo);
}

}  // namespace tf::cpu::kernels::quant_avx2
