// The quantized matmul's own weight layout, built once at load from GGUF
// blocks (model/quant_blocks.h holds the GGUF formats themselves).
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/quant_blocks.h"

namespace tf::cpu::kernels {

// The matmul's weight layout (WeightFormat::q8_0 / q4_0 / q4_k): rows
// (the output columns) in tiles of kQuantTileRows = 8, padded with zero
// rows, each tile a head of scales, padded to 64 bytes, then its quants;
// every 64-byte quant vector holds 16 lanes of 4 bytes, lane 2r + h being
// 4 consecutive quants of tile row r (h = 0: elements 8g..8g+3 of an
// 8-element group g, h = 1: 8g+4..8g+7), so one 4-way int8 dot against a
// broadcast 8 activation bytes gives 16 exact partial sums for 8 rows.
//   q8_0, per block b (32 elements): head 8 fp16 d (row r at 8b + r);
//         quants at 256b: group g's vector at 256b + 64g, each quant q+128
//         (unsigned, 0..255).
//   q4_0, per block b: head as q8_0's; quants at 128b: vector t (0, 1) at
//         128b + 64t holds group t in its low nibbles and group t+2 in its
//         high ones, as GGUF's unsigned nibbles (q = nibble - 8).
//   q4_k, per super-block s (256 elements): head at 160s: d[8], dmin[8]
//         (fp16, row r at r), sc[8][8] and m[8][8] (sub-block j, row r at
//         8j + r, 6-bit values as bytes); quants at 1024s: sub-block j at
//         1024s + 128j in q4_0's nibble layout (nibbles = q, 0..15).
//   q6_k, per super-block s: head at 144s: d[8] (fp16), then scales[16][8]
//         (int8, sub-block i of 16 elements, row r at 16 + 8i + r); quants
//         at 1536s: block j (elements 32j..32j+31, sub-blocks 2j, 2j+1) at
//         1536s + 192j: its low 4 bits in q4_0's nibble layout (128 bytes),
//         then one vector of high 2 bits, group g's at bits 2g, 2g+1 of the
//         lane byte (q unsigned 0..63, x = d*scale*(q-32)).
constexpr int32_t kQuantTileRows = 8;
// Bytes of one tile's head (padded to 64) and of a whole tile, cols wide.
size_t quant_tile_head_bytes(model::QuantType type, int64_t cols);
size_t quant_tile_bytes(model::QuantType type, int64_t cols);
// Bytes of a matrix of `rows` x `cols` in the kernel's layout.
size_t quant_kernel_matrix_bytes(model::QuantType type, int32_t rows, int32_t cols);
// GGUF-layout rows (rows x cols, quant_row_bytes apart) -> the kernel's
// layout (quant_kernel_matrix_bytes bytes at `out`), padding rows as zero
// blocks.
void repack_quant(model::QuantType type, const void* gguf_rows, int32_t rows, int32_t cols, void* out);

}  // namespace tf::cpu::kernels
