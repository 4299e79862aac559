// Matmul over quantized weights (q8_0, q4_0, q5_0, q4_k, q5_k, q6_k) with int8
// activations: y = x W^T, x and y fp32 at the edges.
//
// Activations. pack_rows (PackRowsFn) turns each fp32 row of k inputs (k a
// multiple of 32) into blocks of 32 (QuantActivationBlock): d = amax/127 of
// that block and q = round-to-nearest-even(x * (127/amax)) (all 0 when
// amax == 0), with the block's exact zero-point biases and q4_k's min term
// -(d * (float)sum). A NaN is left out of amax and quantizes to 0. Scalar
// code (pack_rows_quant) and AVX2 and AVX-512 versions (pack_rows_quant_avx2,
// pack_rows_quant_avx512, for the paths of those widths) that give the same
// bits.
//
// Weights (WeightMatrix, format q8_0 / q4_0 / q5_0 / q4_k / q5_k / q6_k, stride == cols,
// cols a multiple of the block, 32 or 256): in tiles of 16 interleaved rows
// (quant_layout.h, built by repack_quant from GGUF rows). The launcher's
// column ranges start on a multiple of 16 (a tile).
//
// Order, for every output element out[m][n] (the same on every path, for
// any M, n range and thread count; the paths are bit-identical):
//   P = +0. For each block b of 32 input elements in order (the k-quants:
//   block j of super-block s is b = 8s + j):
//     q8_0, q4_0, q5_0, q4_k, q5_k:
//       i  = the exact integer sum over the block of wq * xq, wq the signed
//            weight quant (q8_0: q; q4_0: nibble - 8; q5_0: q - 16; q4_k:
//            the nibble 0..15; q5_k: the 5-bit q, 0..31), computed as bias +
//            sum of stored * xq, stored the unsigned quant (q8_0: q + 128)
//       sw = the weight scale, exact in fp32: fp16 d (q8_0, q4_0, q5_0), or
//            d*sc of sub-block j (q4_k, q5_k: an fp16 times a 6-bit integer)
//       P  = fmaf(sw * dx, (float)i, P)          (sw*dx one rounding)
//       q4_k and q5_k, then: P = fmaf(dmin*m, min_x, P), dmin*m exact and
//       min_x = -(dx * (float)sum) from the activation block.
//     q6_k: for its sub-blocks i = 2j and 2j+1 of 16 (elements 16(i%2).. of
//       the block), in that order:
//       i_s = the exact integer sum over the sub-block of (q - 32) * xq (q
//             the unsigned 6-bit quant)
//       P   = fmaf((d*scale_i) * dx, (float)i_s, P)   (d*scale exact)
//   out = P.
// So a tile's 16 lanes are its 16 rows and every path runs the same serial
// chain per lane; no lane tree. One chain step per block and row keeps the
// float work at a third of an instruction per VPDPBUSD zmm: the integer
// dots, not the conversions and multiply-adds, set the pace.
//
// Paths: scalar (the reference), avx2 (u8 x s8 dot by VPMADDUBSW + VPMADDWD),
// avx2 with AVX-VNNI (VPDPBUSD ymm, a tile as two ymm of 8 rows), avx512 (BW
// emulation on zmm) and avx512 with AVX512-VNNI (VPDPBUSD zmm), all from
// quant_tiled_impl.inc. Every
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
#include <string>

#include "cpu/kernels/isa.h"
#include "cpu/kernels/matmul.h"
#include "cpu/kernels/quant_layout.h"
#include "cpu/thread_pool.h"

namespace tf::cpu::kernels {

static_assert(kMatmulColumnGroup % kQuantTileRows == 0, "the launcher hands out whole tiles");

// One activation block of 32 (block b of a row) as the tiled kernels read
// it, 64 bytes: the q's and d, and the zero-point terms the kernels start
// their integer sums from, and q4_k's min term.
struct QuantActivationBlock {
    int8_t q[32];
    // -128 * the block's sum of q (q8_0's weights are stored q + 128;
    // q4_0's, q + 8, take it shifted right by 4).
    int32_t bias_q8;
    // q6_k's (stored q, 0..63, for q - 32): -32 * the sum of the block's
    // 16-element sub-block s (elements 16s..16s+15).
    int32_t bias_q6[2];
    float min_x;  // q4_k's min term -(d * (float)sum)
    float d;
    int32_t unused[3];
};
static_assert(sizeof(QuantActivationBlock) == 64);

// The rest of a block once its q's and d are set, from sums[s]: the exact
// sum of its 16-element sub-block s. One definition for every packing, so
// they cannot disagree. Internal linkage: it is compiled with and without
// AVX2 flags, and one TU's copy must never serve another.
static inline void finish_activation_block(QuantActivationBlock& block, const int32_t (&sums)[2]) {
    const int32_t sum = sums[0] + sums[1];
    block.bias_q8 = -128 * sum;
    for (int32_t s = 0; s < 2; ++s) block.bias_q6[s] = -32 * sums[s];
    block.min_x = -(block.d * static_cast<float>(sum));
}

// Each block of `rows` rows of k inputs (ldx apart; k a multiple of 32)
// through quantize(const float* x32, QuantActivationBlock& zeroed).
template <class QuantizeBlock>
inline void pack_activation_blocks(const float* x, int32_t rows, int32_t k, int32_t ldx, void* packed,
                                   QuantizeBlock quantize) {
    assert(k % 32 == 0);
    auto* out = static_cast<QuantActivationBlock*>(packed);
    for (int32_t r = 0; r < rows; ++r) {
        const float* row = x + static_cast<size_t>(r) * ldx;
        for (int32_t b = 0; b < k / 32; ++b) {
            QuantActivationBlock& block = out[static_cast<size_t>(r) * (k / 32) + b];
            block = QuantActivationBlock{};
            quantize(row + 32 * b, block);
        }
    }
}

// Bytes of one packed activation row of k inputs (k a multiple of 32): its
// k/32 blocks.
size_t quant_activation_row_bytes(int32_t k);
// PackRowsFn: `rows` fp32 rows of k values, ldx apart, into rows of
// quant_activation_row_bytes(k) bytes each.
void pack_rows_quant(const float* x, int32_t rows, int32_t k, int32_t ldx, void* packed);
// The same on AVX2 and on AVX-512 F+BW+VL+DQ (the CPU must have it), bit for bit.
void pack_rows_quant_avx2(const float* x, int32_t rows, int32_t k, int32_t ldx, void* packed);
void pack_rows_quant_avx512(const float* x, int32_t rows, int32_t k, int32_t ldx, void* packed);
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

// "auto" (VNNI where the CPU has it), "on" or "off" (e.g. TF_VNNI): whether
// the quantized kernels of `isa` use the int8 dot product. Throws
// std::invalid_argument on other text and on "on" where the CPU lacks it.
// "off" runs the VPMADDUBSW path a CPU without VNNI (AMD Zen 3) runs, same
// bits, so one machine can measure both.
bool parse_vnni(const std::string& text, Isa isa);

// The quantized kernels for `isa`, with VNNI where the CPU has it.
const QuantKernels& quant_kernels(Isa isa);
// Forced: vnni on a CPU without it (or for scalar) throws std::invalid_argument.
const QuantKernels& quant_kernels(Isa isa, bool vnni);

// The launcher of matmul.h with the quantized kernel: every job on the M
// rows of `xs` packed by pack_rows_quant, columns split over threads in
// whole tiles of 16.
inline void quant_matmul(const QuantKernels& kernels, ThreadPool& pool, const void* xs, int32_t M,
                         std::initializer_list<MatmulJob> jobs) {
    matmul(kernels.matmul, pool, xs, M, jobs);
}

// Quantized WeightFormat <-> QuantType.
inline bool is_quantized(WeightFormat format) {
    return format == WeightFormat::q8_0 || format == WeightFormat::q4_0 || format == WeightFormat::q4_k ||
           format == WeightFormat::q6_k || format == WeightFormat::q5_k || format == WeightFormat::q5_0;
}
inline WeightFormat weight_format(model::QuantType type) {
    switch (type) {
        case model::QuantType::q8_0: return WeightFormat::q8_0;
        case model::QuantType::q4_0: return WeightFormat::q4_0;
        case model::QuantType::q4_k: return WeightFormat::q4_k;
        case model::QuantType::q6_k: return WeightFormat::q6_k;
        case model::QuantType::q5_k: return WeightFormat::q5_k;
        case model::QuantType::q5_0: return WeightFormat::q5_0;
    }
    return WeightFormat::q8_0;
}
// The type of a quantized format (is_quantized(format) must hold).
inline model::QuantType quant_type(WeightFormat format) {
    switch (format) {
        case WeightFormat::q4_0: return model::QuantType::q4_0;
        case WeightFormat::q4_k: return model::QuantType::q4_k;
        case WeightFormat::q6_k: return model::QuantType::q6_k;
        case WeightFormat::q5_k: return model::QuantType::q5_k;
        case WeightFormat::q5_0: return model::QuantType::q5_0;
        default: assert(format == WeightFormat::q8_0); return model::QuantType::q8_0;
    }
}

}  // namespace tf::cpu::kernels
