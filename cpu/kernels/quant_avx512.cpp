// The avx512 path of the quantized matmul without VNNI: the u8 x s8 4-way
// dot as VPMADDUBSW + VPMADDWD (AVX512-BW), exact for every format here.
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <memory>

#include "cpu/kernels/quant_matmul.h"
#include "cpu/kernels/vec16_avx512.h"

namespace tf::cpu::kernels::quant_avx512 {

namespace {

using namespace avx512;  // V16 and its operations

#include "cpu/kernels/quant_ops_avx512.inc"

// Activation rows and tiles per pass: 12 rows of one tile (12
// accumulators, the tile's 8 group vectors and the sign-split forms fit the
// 32 zmm). bench-dot, 3072 x 1024, one thread, Zen 4, best of 3 at M = 64:
// 12 x 1 gave q8_0 161, q4_k 188, q6_k 168 GOP/s against 6 x 2's 137, 170,
// 142. 16 x 1 lost at the model level (q4_k_m, 16 and 64 rows, 2026-12-05).
constexpr int kTiledRows = 12, kTiledTiles = 1;
// Whether q8_0's tiles loop over the weight groups outside the rows
// (quant_tiled_impl.inc, run_group_outer).
constexpr bool kQ8GroupOuter = false;
constexpr bool kNibbleGroupOuter = false;  // the same for q4_0 and q5_0

inline I32 dot_u8s8(const I32& acc, const I8& u, const I8& s) {
    const __m512i pairs = _mm512_maddubs_epi16(u.v, s.v);
    return {_mm512_add_epi32(acc.v, _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)))};
}
// q8_0's stored q+128 would overflow VPMADDUBSW's int16 pairs: back to
// q = stored ^ 0x80, then |q| times x negated where q < 0, no bias;
// 128 * 127 * 2 fits int16.
constexpr bool kQ8Bias = false;
inline I32 dot_q8(const I32& acc, const I8& u, const I8& x) {
    const __m512i q = _mm512_xor_si512(u.v, _mm512_set1_epi8(static_cast<char>(0x80)));
    const __m512i signed_x = _mm512_mask_sub_epi8(x.v, _mm512_movepi8_mask(q), _mm512_setzero_si512(), x.v);
    return dot_u8s8(acc, I8{_mm512_abs_epi8(q)}, I8{signed_x});
}

// Small weights (nibbles, q6_k's 6 bits): their VPMADDUBSW pairs add up in
// int16 before one VPMADDWD, as on avx2 (quant_avx2.cpp says why it is exact).
constexpr bool kSmallSumsInInt16 = true;
constexpr bool kDotBroadcastsFromMemory = false;
template <int kBits, int N>
inline I32 small_dot_groups(I32 acc, const I8* w, const int8_t* x) {
    constexpr int kChunk = 32767 / (2 * ((1 << kBits) - 1) * 127);
    static_assert(kChunk >= 2);
    #pragma GCC unroll 8
    for (int g0 = 0; g0 < N; g0 += kChunk) {
        __m512i sum = _mm512_maddubs_epi16(w[g0].v, _mm512_set1_epi32(four_bytes(x + 4 * g0)));
        for (int g = g0 + 1; g < std::min(N, g0 + kChunk); ++g)
            sum = _mm512_add_epi16(sum, _mm512_maddubs_epi16(w[g].v, _mm512_set1_epi32(four_bytes(x + 4 * g))));
        acc = {_mm512_add_epi32(acc.v, _mm512_madd_epi16(sum, _mm512_set1_epi16(1)))};
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

}  // namespace tf::cpu::kernels::quant_avx512
