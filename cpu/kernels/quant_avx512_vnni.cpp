// The avx512 path of the quantized matmul with AVX512-VNNI: VPDPBUSD zmm.
// q8_0's weights are stored offset by 128 (unsigned, repack_quant) and the
// accumulator starts at -128 * (sum of the 4 activations), so the lanes hold
// the same exact integers as the other paths.
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <memory>

#include "cpu/kernels/quant_matmul.h"
#include "cpu/kernels/vec16_avx512.h"

namespace tf::cpu::kernels::quant_avx512_vnni {

namespace {

using namespace avx512;  // V16 and its operations

#include "cpu/kernels/quant_ops_avx512.inc"

// Activation rows and tiles per pass: 16 rows of one tile (16
// accumulators, the 8 group vectors, a broadcast and the scales: 27 of the
// 32 zmm). A verify round of 16 rows is then one pass over the weights,
// whose memory stream overlaps all of its compute; with 12 rows it took two
// passes of 8, the first waiting on memory and the second on compute.
// bench-model, q06b Q8_0 forward of 16 rows, 2 threads, Zen 4: 56-57 ms with
// 12 rows a pass against 46-47 with 16; 64 rows unchanged (2026-12-05).
constexpr int kTiledRows = 16, kTiledTiles = 1;
// Whether q8_0's tiles loop over the weight groups outside the rows
// (quant_tiled_impl.inc, run_group_outer). Rows outside the groups kept the
// 8 group vectors of a block live beside 16 accumulators and spilled about
// 200 stack operands a block; groups outside leave one weight vector live
// and 16 independent dots per group. bench-model, q06b Q8_0 forward, 2
// threads, Intel Xeon (model 207), three alternations, ms at M = 16 / 64:
// 48.6-50.6 / 160-165 -> 43.8-48.8 / 135-142; Q4_0 40.9-43.9 / 164-170 ->
// 40.5-40.8 / 153-158; decode level (2026-12-07).
constexpr bool kQ8GroupOuter = true;
constexpr bool kNibbleGroupOuter = true;  // the same for q4_0 and q5_0

inline I32 dot_u8s8(const I32& acc, const I8& u, const I8& s) { return {_mm512_dpbusd_epi32(acc.v, u.v, s.v)}; }
// q8_0's stored q+128 against x, the -128 * sum bias in acc: VPDPBUSD as is.
constexpr bool kQ8Bias = true;
inline I32 dot_q8(const I32& acc, const I8& u, const I8& x) { return dot_u8s8(acc, u, x); }

constexpr bool kSmallSumsInInt16 = false;  // each dot_u8s8 adds into int32 as it goes

// VPDPBUSD with the 4 activation bytes as its memory operand, broadcast to
// the 16 lanes ({1to16}); GCC 12 keeps _mm512_set1_epi32 of a load as a
// separate VPBROADCASTD, one per dot in a tile of 16 rows.
constexpr bool kDotBroadcastsFromMemory = true;
inline I32 dot_u8s8_from(const I32& acc, const I8& u, const int8_t* x) {
    __m512i sum = acc.v;
    asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(sum) : "v"(u.v), "m"(*reinterpret_cast<const int32_t*>(x)));
    return {sum};
}

// Rows of a tile whose dot chains are interleaved (quant_tiled_impl.inc,
// paired_dot_groups): one row's 8 VPDPBUSD are a dependent chain, and two
// side by side fit the 32 zmm. bench-dot --threads=1 --path=VNNI, Intel
// Xeon (model 207), best of three, GOP/s at M = 8/16/32/64: q8_0
// 311/307/310/323 -> 343/325/353/358, q4_k 312/288/293/294 ->
// 334/309/326/317 (2026-12-07).
constexpr int kRowsInterleaved = 2;

#include "cpu/kernels/quant_tiled_impl.inc"

}  // namespace

void matmul(const void* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end, float* out,
            int32_t ldo) {
    quant_matmul_any(xs, M, w, n_begin, n_end, out, ldo);
}

}  // namespace tf::cpu::kernels::quant_avx512_vnni
