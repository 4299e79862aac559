// The quantized matmul's own weight layout, built once at load from GGUF
// blocks (model/quant_blocks.h holds the GGUF formats themselves).
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/quant_blocks.h"

namespace tf::cpu::kernels {

// The matmul's weight layout (WeightFormat::q8_0 / q4_0 / q5_0 / q4_k / q5_k / q6_k):
// rows (the output columns) in tiles of kQuantTileRows = 16, padded with
// zero rows, each tile a head of scales, padded to 64 bytes, then its
// quants. Every 64-byte quant vector holds 16 lanes of 4 bytes, lane r
// being 4 consecutive quants of tile row r (group g of a block of 32: its
// elements 4g..4g+3), so one 4-way int8 dot against 4 activation bytes
// broadcast to every lane adds to the 16 rows' sums, one sum per row.
//   q8_0, per block b (32 elements): head 16 fp16 d (row r at 16b + r);
//         quants at 512b: group g's vector at 512b + 64g, each quant q+128
//         (unsigned, 0..255).
//   q4_0, per block b: head as q8_0's; quants at 256b: vector t (0..3) at
//         256b + 64t holds group t in its low nibbles and group t+4 in its
//         high ones, as GGUF's unsigned nibbles (q = nibble - 8).
//   q5_0, per block b: head as q8_0's; quants at 320b: q4_0's nibble
//         vectors (256 bytes), then one vector of fifth bits, group g's at
//         bit g of the lane byte (q unsigned 0..31, x = d*(q-16)).
//   q4_k, per super-block s (256 elements): head at 320s: d[16], dmin[16]
//         (fp16, row r at r), sc[8][16] and m[8][16] (sub-block j, row r at
//         16j + r, 6-bit values as bytes); quants at 2048s: sub-block j at
//         2048s + 256j in q4_0's nibble layout (nibbles = q, 0..15).
//   q6_k, per super-block s: head at 288s: d[16] (fp16), then scales[16][16]
//         (int8, sub-block i of 16 elements, row r at 32 + 16i + r); quants
//         at 3072s: block j (elements 32j..32j+31, sub-blocks 2j, 2j+1) at
//         3072s + 384j: its low 4 bits in q4_0's nibble layout (256 bytes),
//         then two vectors of high 2 bits, group g's in vector g/4 at bits
//         2(g%4), 2(g%4)+1 of the lane byte (q unsigned 0..63, x =
//         d*scale*(q-32)).
//   q5_k, per super-block s: head as q4_k's; quants at 2560s: sub-block j
//         at 2560s + 320j: its low 4 bits in q4_0's nibble layout (256
//         bytes), then one vector of fifth bits, group g's at bit g of the
//         lane byte (q unsigned 0..31).
constexpr int32_t kQuantTileRows = 16;
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
