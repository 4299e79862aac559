// The avx2 path of the quantized matmul with AVX-VNNI: VPDPBUSD ymm. q8_0's
// signed weights go in offset by 128 and the accumulator starts at -128 *
// (sum of the 4 activations), as in quant_avx512_vnni.cpp.
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <memory>

#include "cpu/kernels/quant_matmul.h"
#include "cpu/kernels/vec16_avx2.h"

namespace tf::cpu::kernels::quant_avx2_vnni {

namespace {

using namespace avx2;  // V16 and its operations

#include "cpu/kernels/quant_ops_avx2.inc"

// Activation rows per pass over a tile. Without the sign split of the
// VPMADDUBSW path there are registers for 6 rows' integer sums (12 ymm,
// with one weight pair and a broadcast: 15 of 16), and one pass of 6 rows
// reads each L2 chunk of weights for 6 rows instead of 4. bench-dot, 3072 x
// 1024, 2 threads, Zen 5 (AVX-VNNI), GOP/s at M = 16 / 64, 4 rows -> 6:
// q8_0 562 / 583 -> 649 / 661, q4_0 365 / 404 -> 542 / 562, q4_k 312 / 314
// -> 436 / 440, q6_k 261 / 266 -> 362 / 383; 7 and 8 rows were slower than
// 6, and q8_0 with its rows outside the groups slower still (2026-12-06).
constexpr int kTiledRows = 6, kTiledTiles = 1;
// Whether q8_0's tiles loop over the weight groups outside the rows
// (quant_tiled_impl.inc, run_group_outer).
constexpr bool kQ8GroupOuter = true;
constexpr bool kNibbleGroupOuter = true;  // the same for q4_0 and q5_0

inline I32 dot_u8s8(const I32& acc, const I8& u, const I8& s) {
    return {_mm256_dpbusd_avx_epi32(acc.lo, u.lo, s.lo), _mm256_dpbusd_avx_epi32(acc.hi, u.hi, s.hi)};
}
// q8_0's stored q+128 against x, the -128 * sum bias in acc: VPDPBUSD as is.
constexpr bool kQ8Bias = true;
inline I32 dot_q8(const I32& acc, const I8& u, const I8& x) { return dot_u8s8(acc, u, x); }

constexpr bool kSmallSumsInInt16 = false;  // each dot_u8s8 adds into int32 as it goes
constexpr bool kDotBroadcastsFromMemory = false;  // VEX VPDPBUSD has no embedded broadcast

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

}  // namespace tf::cpu::kernels::quant_avx2_vnni
