// Quantized weight blocks as GGUF stores them (byte for byte) and their
// reference quantizers and dequantizers: the formats every backend and the
// checkpoint readers share. The CPU matmul's own tiled layout, built from
// these blocks at load, is in cpu/kernels/quant_layout.h.
//
// Formats, per block of `elements` weights (fp16 = IEEE half):
//   q8_0  {fp16 d; int8 qs[32]}                                 x = d*q
//   q4_0  {fp16 d; uint8 qs[16]}  element j < 16 is the low nibble of qs[j],
//         element j + 16 its high nibble, both minus 8              x = d*q
//   q4_k  {fp16 d, dmin; uint8 scales[12]; uint8 qs[128]}: 256 weights in 8
//         sub-blocks of 32, each with a 6-bit scale sc and 6-bit min m packed
//         in `scales` (q4k_scale_min); sub-blocks 2i and 2i+1 share
//         qs[32i..32i+31], 2i in the low nibbles         x = d*sc*q - dmin*m
//   q6_k  {uint8 ql[128]; uint8 qh[64]; int8 scales[16]; fp16 d}: 256
//         weights in 16 sub-blocks of 16, q = 6 bits from ql (low 4) and qh
//         (high 2) as q6k_quant lays them out         x = d*scale*(q - 32)
//   q5_0  {fp16 d; uint8 qh[4]; uint8 qs[16]}: q4_0's nibbles and a fifth
//         bit per element (element j at bit j of the little-endian qh),
//         q5_0_quant, minus 16                               x = d*(q - 16)
//   q5_k  {fp16 d, dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]}:
//         q4_k's sub-blocks, scales and nibbles, and a fifth bit per
//         weight: element l of sub-block j has bit j of qh[l] as its bit 4
//         (q5k_quant), q in 0..31                      x = d*sc*q - dmin*m
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace tf::model {

enum class QuantType { q8_0, q4_0, q4_k, q6_k, q5_k, q5_0 };

// "q8_0", "q4_0", "q4_k", "q6_k", "q5_k", "q5_0".
const char* quant_type_name(QuantType type);
// The names above (case-insensitive, so GGUF's "Q4_K" too); throws
// std::invalid_argument naming the accepted ones.
QuantType parse_quant_type(const std::string& text);

struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[32];
};
struct BlockQ4_0 {
    uint16_t d;
    uint8_t qs[16];
};
struct BlockQ4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[128];
};
struct BlockQ6_K {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint16_t d;
};
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[16];
};
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[32];
    uint8_t qs[128];
};
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ5_0) == 22);

// Weights per block: 32 for q8_0, q4_0 and q5_0, 256 for the k-quants.
int64_t quant_block_elements(QuantType type);
// Bytes per block in the GGUF layout.
size_t quant_block_bytes(QuantType type);
// Bytes of one GGUF row of `cols` weights (cols a multiple of the block).
size_t quant_row_bytes(QuantType type, int64_t cols);

// x -> blocks, n a multiple of quant_block_elements(type). q8_0 and q4_0
// compute what ggml's reference quantizers compute; the k-quants search
// each sub-block's scale (and q4_k's and q5_k's min) for the least squared
// error.
void quantize_row(QuantType type, const float* x, int64_t n, void* out);
// Blocks (GGUF layout) -> n floats, each d*... rounded as the header says.
void dequantize_row(QuantType type, const void* blocks, int64_t n, float* out);

// ggml's get_scale_min_k4: sub-block j's 6-bit scale and min out of the 12
// scale bytes (j < 4: low 6 bits of bytes j and j+4; j >= 4: a nibble of
// byte j+4 and the top 2 bits of byte j-4, resp. j).
inline void q4k_scale_min(int j, const uint8_t* scales, uint8_t& sc, uint8_t& m) {
    if (j < 4) {
        sc = scales[j] & 63;
        m = scales[j + 4] & 63;
    } else {
        sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
        m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
    }
}

// q6_k element e (0..255) of a block as its unsigned 6-bit value: each half
// of 128 takes 64 bytes of ql and 32 of qh; in a half, element 32*g + l
// (g = 0..3, l < 32) has its low 4 bits in ql[l + 32*(g%2)] (low nibble for
// g < 2, high for g >= 2) and its high 2 bits at bit 2g of qh[l].
inline int q6k_quant(const BlockQ6_K& b, int e) {
    const int half = e / 128, g = (e % 128) / 32, l = e % 32;
    const uint8_t low = b.ql[64 * half + l + 32 * (g % 2)];
    const int lo = g < 2 ? (low & 0xF) : (low >> 4);
    const int hi = (b.qh[32 * half + l] >> (2 * g)) & 3;
    return lo | (hi << 4);
}

// q4_k element e (0..255) of a block as its nibble.
inline int q4k_quant(const BlockQ4_K& b, int e) {
    const int j = e / 32, l = e % 32;
    const uint8_t byte = b.qs[32 * (j / 2) + l];
    return j % 2 == 0 ? (byte & 0xF) : (byte >> 4);
}

// q5_0 element e (0..31) of a block as its unsigned 5-bit value.
inline int q5_0_quant(const BlockQ5_0& b, int e) {
    const int low = e < 16 ? (b.qs[e] & 0xF) : (b.qs[e - 16] >> 4);
    return low | (((b.qh[e / 8] >> (e % 8)) & 1) << 4);
}

// q5_k element e (0..255) of a block as its unsigned 5-bit value.
inline int q5k_quant(const BlockQ5_K& b, int e) {
    const int j = e / 32, l = e % 32;
    const uint8_t byte = b.qs[32 * (j / 2) + l];
    const int low = j % 2 == 0 ? (byte & 0xF) : (byte >> 4);
    return low | (((b.qh[l] >> j) & 1) << 4);
}

// IEEE half <-> float. fp16_to_float is exact; float_to_fp16 rounds to
// nearest even (overflow to infinity, NaN kept a NaN).
inline float fp16_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
    uint32_t bits;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000u | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {  // subnormal: mantissa * 2^-24, exact in fp32
        float value = static_cast<float>(mantissa) * 0x1p-24f;
        std::memcpy(&bits, &value, 4);
        bits |= sign;
    }
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
}
// Inline: the KV cache converts every key and value it writes.
inline uint16_t float_to_fp16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00 | ((magnitude >> 13) & 0x3FF));
    if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00);  // rounds past 65504
    if (magnitude < 0x38800000u) {  // below 2^-14: subnormal half, value / 2^-24 rounded to nearest even
        float absolute;
        std::memcpy(&absolute, &magnitude, 4);
        const float scaled = absolute * 0x1p24f;  // exact (a power-of-two scale, no underflow)
        return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
    }
    // Normal: drop 13 mantissa bits with round to nearest even; a carry
    // into the exponent is the right answer too.
    const uint32_t rounded = magnitude + 0xFFFu + ((magnitude >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded >> 13) - (112u << 10)));
}

}  // namespace tf::model
