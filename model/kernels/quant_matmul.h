// Matmul over quantized weights (q8_0, q4_0, q4_k, q6_k) with int8
// activations: y = x W^T, x and y fp32 at the edges.
//
// Activations. pack_rows (PackRowsFn) turns each fp32 row of k inputs (k a
// multiple of 32) into blocks of 32: d = amax/127 of that block and
// q = round-to-nearest-even(x * (127/amax)) (all 0 when amax == 0). A row
// holds them twice: as pairs (QuantActivationPair, for the untiled q6_k
// kernel: blocks 2p and 2p+1, per 4 q's their sum, the scale per lane, the
// second block all zero when k/32 is odd) and then as blocks
// (QuantActivationBlock, for the tiled kernels: the q's, d, and per half h
// of the block the exact zero-point biases -128*sum_h and -8*sum_h and
// q4_k's min term -(d * (float)sum_h)). Plain scalar code, the same bits
// on every path.
//
// Weights (WeightMatrix, format q8_0 / q4_0 / q4_k / q6_k, stride == cols,
// cols a multiple of the block, 32 or 256): q8_0, q4_0 and q4_k in tiles of
// 8 interleaved rows (quant_blocks.h, built by repack_quant from GGUF rows),
// q6_k in GGUF's rows as they are. The launcher's column ranges start on a
// multiple of 8 (a tile).
//
// Order, tiled formats (q8_0, q4_0, q4_k), for every output element
// out[m][n] (the same on every path, for any M, n range and thread count;
// the paths are bit-identical). "Half" h of a block of 32 is its elements
// e with (e % 8) / 4 == h.
//   P[0] = P[1] = +0. For each block b of 32 input elements in order (q4_k:
//   sub-block j of super-block s is b = 8s + j):
//     i_h = the exact integer sum over half h of wq * xq, wq the signed
//           weight quant (q8_0: q; q4_0: nibble - 8; q4_k: the nibble
//           0..15), computed as bias + sum of stored * xq, stored the
//           unsigned quant (q8_0: q + 128)
//     sw  = the weight scale, exact in fp32: fp16 d (q8_0, q4_0), or
//           d*sc (q4_k, an fp16 times a 6-bit integer)
//     P[h] = fmaf(sw * dx, (float)i_h, P[h])         (sw*dx one rounding)
//     q4_k only, then: P[h] = fmaf(dmin*m, min_x_h, P[h]), dmin*m exact,
//     min_x_h = -(dx * (float)sum_h) from the activation block.
//   Finally out = P[0] + P[1].
// So a tile's 16 lanes are P[h] of its 8 rows (lane 2r + h) and every path
// runs the same serial chain per lane; no lane tree.
//
// Order, q6_k (untiled), for every output element out[m][n]:
//   acc[0..15] = +0. For each block pair p (input elements 64p..64p+63), lane
//   l (elements 64p+4l..64p+4l+3, i.e. block 2p + l/8):
//     ip   = the exact integer sum of the 4 products (q-32)*xq
//     sw   = d*scale for those 4 elements, exact in fp32
//     acc[l] = fmaf(sw * dx[l], (float)ip, acc[l])     (sw*dx one rounding)
//   where dx[l] is the activation block's d. Finally out = reduce16(acc):
//   lanes i + i+8, then i + i+4, i + i+2, i + i+1 (kernels/vec16_*.h).
//
// Paths: scalar (the reference), avx2 (u8 x s8 dot by VPMADDUBSW + VPMADDWD),
// avx2 with AVX-VNNI (VPDPBUSD ymm, a tile as two ymm of 4 rows), avx512 (BW
// emulation on zmm) and avx512 with AVX512-VNNI (VPDPBUSD zmm). Every
// integer partial is exact on all of them: q8_0's q + 128 would overflow
// VPMADDUBSW's int16 pairs, so the emulated paths take q back (stored ^
// 0x80) and multiply |q| by x with q's sign and no bias (the same integer);
// 4- and 6-bit weights are well inside it.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "model/kernels/isa.h"
#include "model/kernels/matmul.h"
#include "model/kernels/quant_blocks.h"
#include "model/thread_pool.h"

namespace tf::model::kernels {

// Blocks 2p and 2p+1 of one activation row, 256 bytes.
struct QuantActivationPair {
    int8_t q[64];       // block 2p's 32 q's, then block 2p+1's
    int32_t sum4[16];   // sum4[l] = q[4l] + q[4l+1] + q[4l+2] + q[4l+3]
    float d[16];        // d[l] = the scale of block 2p + l/8
    // q4_k's min term for the 8 blocks b = 8*(p/4) + i (i = 0..7) of the
    // super-block this pair falls in: min_x[8 + i] = -(d_b * (float)xsum_b),
    // xsum_b the sum of block b's 32 q's (a block in no pair of the row:
    // +0); min_x[0..7] = +0. The same in the 4 pairs of a super-block.
    float min_x[16];
};
static_assert(sizeof(QuantActivationPair) == 256);

// One activation block of 32 (block b of a row) as the tiled kernels read
// it, 64 bytes: the same q's and d as the pairs, and per half h (the
// elements 8g + 4h + i of the block's groups g = 0..3, i = 0..3, whose
// exact sum is sum_h) the zero-point terms the kernels start their integer
// sums from, and q4_k's min term.
struct QuantActivationBlock {
    int8_t q[32];
    // -128 * sum_h (q8_0's weights are stored q + 128; q4_0's, q + 8, take
    // it shifted right by 4).
    int32_t bias_q8[2];
    // q6_k's (stored q, 0..63, for q - 32): -32 * the sum of half h of the
    // block's 16-element sub-block i (elements 16i..16i+15), at 2i + h.
    int16_t bias_q6[4];
    float min_x[2];  // q4_k's min term -(d * (float)sum_h)
    float d;
    int32_t unused;
};
static_assert(sizeof(QuantActivationBlock) == 64);

// A packed activation row of k inputs (k a multiple of 32): the pairs
// (k+63)/64 of them, for the untiled q6_k kernel), then the row's k/32
// blocks, padded to a multiple of 4 (so a row is a whole number of pairs).
size_t quant_activation_row_bytes(int32_t k);
inline size_t quant_activation_pairs_bytes(int32_t k) { return static_cast<size_t>((k + 63) / 64) * sizeof(QuantActivationPair); }

// PackRowsFn: `rows` fp32 rows of k values, ldx apart, into rows of
// quant_activation_row_bytes(k) bytes each.
void pack_rows_quant(const float* x, int32_t rows, int32_t k, int32_t ldx, void* packed);
// Back to fp32 (d * q), for tests and references.
void unpack_row_quant(const void* packed_row, int32_t k, float* x);

// Whether the CPU has the int8 dot product (VPDPBUSD) for this path: AVX-VNNI
// for avx2, AVX512-VNNI for avx512 and avx512-bf16; false for scalar.
bool quant_vnni_supported(Isa isa);

struct QuantKernels {
    Isa isa = Isa::scalar;  // the vector width; avx512-bf16 uses the avx512 path
    bool vnni = false;
    PackRowsFn pack_rows = &pack_rows_quant;
    MatmulFn matmul = nullptr;  // takes a WeightMatrix of a quantized format only

    size_t row_bytes(int32_t k) const { return quant_activation_row_bytes(k); }
};

// The quantized kernels for `isa`, with VNNI where the CPU has it.
const QuantKernels& quant_kernels(Isa isa);
// Forced: vnni on a CPU without it (or for scalar) throws std::invalid_argument.
const QuantKernels& quant_kernels(Isa isa, bool vnni);

// The launcher: as kernels::matmul (matmul.h), every job on the M packed
// rows of `xs`, columns split over threads in groups of 8.
inline void quant_matmul(const QuantKernels& kernels, ThreadPool& pool, const void* xs, int32_t M,
                         std::initializer_list<MatmulJob> jobs) {
    KernelTable table;  // the launcher only calls .matmul
    table.isa = kernels.isa;
    table.pack_rows = kernels.pack_rows;
    table.matmul = kernels.matmul;
    matmul(table, pool, xs, M, jobs);
}

// Quantized WeightFormat <-> QuantType.
inline bool is_quantized(WeightFormat format) {
    return format == WeightFormat::q8_0 || format == WeightFormat::q4_0 || format == WeightFormat::q4_k ||
           format == WeightFormat::q6_k;
}
inline WeightFormat weight_format(QuantType type) {
    switch (type) {
        case QuantType::q8_0: return WeightFormat::q8_0;
        case QuantType::q4_0: return WeightFormat::q4_0;
        case QuantType::q4_k: return WeightFormat::q4_k;
        case QuantType::q6_k: return WeightFormat::q6_k;
    }
    return WeightFormat::q8_0;
}

}  // namespace tf::model::kernels
