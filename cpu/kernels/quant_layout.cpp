#include "cpu/kernels/quant_layout.h"

#include <cassert>
#include <cstring>

namespace tf::cpu::kernels {

namespace {

size_t pad64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// Byte of row r, element e (0..31) of a block, in a run of 64-byte quant
// vectors: group e/4 is the vector, lane r, byte e%4 of the lane.
size_t lane_byte(int32_t r, int32_t e) { return 64 * (e / 4) + 4 * r + e % 4; }

// One block of 32 unsigned nibbles (elements e of tile row r given by
// `nibble`) into 256 bytes: vector t holds group t low, group t+4 high.
template <class Nibble>
void put_nibbles(uint8_t* out, int32_t r, Nibble nibble) {
    for (int32_t e = 0; e < 16; ++e) out[lane_byte(r, e)] = static_cast<uint8_t>(nibble(e) | (nibble(e + 16) << 4));
}

// q4_k's and q5_k's head of super-block `head` for tile row r: d, dmin and
// the 8 sub-blocks' 6-bit scales and mins as bytes.
template <class Block>
void put_affine_k_head(uint8_t* head, int32_t r, const Block& block) {
    std::memcpy(head + 2 * r, &block.d, 2);
    std::memcpy(head + 32 + 2 * r, &block.dmin, 2);
    for (int32_t j = 0; j < 8; ++j) model::q4k_scale_min(j, block.scales, head[64 + 16 * j + r], head[192 + 16 * j + r]);
}

}  // namespace

size_t quant_tile_head_bytes(model::QuantType type, int64_t cols) {
    switch (type) {
        case model::QuantType::q8_0:
        case model::QuantType::q4_0:
        case model::QuantType::q5_0: return pad64(static_cast<size_t>(cols / 32) * 32);
        case model::QuantType::q4_k:
        case model::QuantType::q5_k: return pad64(static_cast<size_t>(cols / 256) * 320);
        case model::QuantType::q6_k: return pad64(static_cast<size_t>(cols / 256) * 288);
    }
    return 0;
}

size_t quant_tile_bytes(model::QuantType type, int64_t cols) {
    switch (type) {
        case model::QuantType::q8_0: return quant_tile_head_bytes(type, cols) + static_cast<size_t>(cols / 32) * 512;
        case model::QuantType::q4_0: return quant_tile_head_bytes(type, cols) + static_cast<size_t>(cols / 32) * 256;
        case model::QuantType::q4_k: return quant_tile_head_bytes(type, cols) + static_cast<size_t>(cols / 256) * 2048;
        case model::QuantType::q6_k: return quant_tile_head_bytes(type, cols) + static_cast<size_t>(cols / 256) * 3072;
        case model::QuantType::q5_k: return quant_tile_head_bytes(type, cols) + static_cast<size_t>(cols / 256) * 2560;
        case model::QuantType::q5_0: return quant_tile_head_bytes(type, cols) + static_cast<size_t>(cols / 32) * 320;
    }
    return 0;
}

size_t quant_kernel_matrix_bytes(model::QuantType type, int32_t rows, int32_t cols) {
    const size_t tiles = static_cast<size_t>((rows + kQuantTileRows - 1) / kQuantTileRows);
    return tiles * quant_tile_bytes(type, cols);
}

void repack_quant(model::QuantType type, const void* gguf_rows, int32_t rows, int32_t cols, void* out) {
    assert(cols % model::quant_block_elements(type) == 0);
    const auto* in = static_cast<const uint8_t*>(gguf_rows);
    const size_t row_bytes = model::quant_row_bytes(type, cols);
    const size_t head_bytes = quant_tile_head_bytes(type, cols), tile_bytes = quant_tile_bytes(type, cols);
    const int32_t tiles = (rows + kQuantTileRows - 1) / kQuantTileRows;
    const int32_t blocks = static_cast<int32_t>(cols / model::quant_block_elements(type));
    for (int32_t t = 0; t < tiles; ++t) {
        uint8_t* tile = static_cast<uint8_t*>(out) + static_cast<size_t>(t) * tile_bytes;
        std::memset(tile, 0, tile_bytes);  // padding rows: d = 0, quants 0 ...
        uint8_t* quants = tile + head_bytes;
        if (type == model::QuantType::q8_0)  // ... and q8_0's offset zero
            std::memset(quants, 128, tile_bytes - head_bytes);
        for (int32_t r = 0; r < kQuantTileRows; ++r) {
            const int32_t row = t * kQuantTileRows + r;
            if (row >= rows) break;
            const uint8_t* src = in + static_cast<size_t>(row) * row_bytes;
            for (int32_t b = 0; b < blocks; ++b) {
                switch (type) {
                    case model::QuantType::q8_0: {
                        model::BlockQ8_0 block;
                        std::memcpy(&block, src + sizeof(model::BlockQ8_0) * b, sizeof block);
                        std::memcpy(tile + 32 * b + 2 * r, &block.d, 2);
                        for (int32_t e = 0; e < 32; ++e)
                            quants[512 * b + lane_byte(r, e)] = static_cast<uint8_t>(block.qs[e] + 128);
                        break;
                    }
                    case model::QuantType::q4_0: {
                        model::BlockQ4_0 block;
                        std::memcpy(&block, src + sizeof(model::BlockQ4_0) * b, sizeof block);
                        std::memcpy(tile + 32 * b + 2 * r, &block.d, 2);
                        // GGUF: element e < 16 is qs[e]'s low nibble, e + 16 its high one
                        put_nibbles(quants + 256 * b, r,
                                    [&](int32_t e) { return e < 16 ? block.qs[e] & 0xF : block.qs[e - 16] >> 4; });
                        break;
                    }
                    case model::QuantType::q5_0: {
                        model::BlockQ5_0 block;
                        std::memcpy(&block, src + sizeof(model::BlockQ5_0) * b, sizeof block);
                        std::memcpy(tile + 32 * b + 2 * r, &block.d, 2);
                        uint8_t* qb = quants + 320 * b;
                        put_nibbles(qb, r, [&](int32_t e) { return model::q5_0_quant(block, e) & 0xF; });
                        for (int32_t e = 0; e < 32; ++e)  // group e/4: bit e/4 of the lane byte
                            qb[256 + 4 * r + e % 4] |= static_cast<uint8_t>((model::q5_0_quant(block, e) >> 4) << (e / 4));
                        break;
                    }
                    case model::QuantType::q4_k: {
                        model::BlockQ4_K block;
                        std::memcpy(&block, src + sizeof(model::BlockQ4_K) * b, sizeof block);
                        put_affine_k_head(tile + 320 * b, r, block);
                        for (int32_t j = 0; j < 8; ++j)
                            put_nibbles(quants + 2048 * b + 256 * j, r,
                                        [&](int32_t l) { return model::q4k_quant(block, 32 * j + l); });
                        break;
                    }
                    case model::QuantType::q5_k: {
                        model::BlockQ5_K block;
                        std::memcpy(&block, src + sizeof(model::BlockQ5_K) * b, sizeof block);
                        put_affine_k_head(tile + 320 * b, r, block);
                        for (int32_t j = 0; j < 8; ++j) {
                            uint8_t* qj = quants + 2560 * b + 320 * j;
                            put_nibbles(qj, r, [&](int32_t e) { return model::q5k_quant(block, 32 * j + e) & 0xF; });
                            for (int32_t e = 0; e < 32; ++e)  // group e/4: bit e/4 of the lane byte
                                qj[256 + 4 * r + e % 4] |=
                                    static_cast<uint8_t>((model::q5k_quant(block, 32 * j + e) >> 4) << (e / 4));
                        }
                        break;
                    }
                    case model::QuantType::q6_k: {
                        model::BlockQ6_K block;
                        std::memcpy(&block, src + sizeof(model::BlockQ6_K) * b, sizeof block);
                        uint8_t* head = tile + 288 * b;
                        std::memcpy(head + 2 * r, &block.d, 2);
                        for (int32_t i = 0; i < 16; ++i) head[32 + 16 * i + r] = static_cast<uint8_t>(block.scales[i]);
                        for (int32_t j = 0; j < 8; ++j) {
                            uint8_t* qj = quants + 3072 * b + 384 * j;
                            put_nibbles(qj, r, [&](int32_t e) { return model::q6k_quant(block, 32 * j + e) & 0xF; });
                            for (int32_t e = 0; e < 32; ++e) {  // group g = e/4: vector g/4, bits 2(g%4)
                                const int high = model::q6k_quant(block, 32 * j + e) >> 4;
                                qj[256 + 64 * (e / 16) + 4 * r + e % 4] |= static_cast<uint8_t>(high << (2 * (e / 4 % 4)));
                            }
                        }
                        break;
                    }
                }
            }
        }
    }
}

}  // namespace tf::cpu::kernels
