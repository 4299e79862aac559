// The element type of the CPU backend's KV cache, and the conversions it
// needs. A key or value is converted once, when its row's K and V are
// computed (kv_cache.cpp, plain integer code, the same on every path); the
// attention kernel widens the stored bits back to fp32 exactly
// (attention_impl.inc), so prefill, decode and verify all read the same
// numbers.
//
// q8_0 quarters it (about 1.1 bytes an element): each position's key and
// value are cut into blocks of 32 dimensions, each block int8 values and
// one fp32 scale (its largest magnitude / 127); the kernel reads a value as
// float(int8) * scale, one rounding, the same on every path.
//
// f16 is the default: it halves the cache like bf16 but keeps 11
// significant bits to bf16's 8, and F16C (on every CPU the avx2 path
// runs on) widens 8 or 16 of them in one instruction. Its range ends at
// 65504; keys and values beyond it are stored as +-65504 rather than
// infinity, so one outsized activation cannot turn a softmax into NaN.
// Why not bf16 by default: docs/design.md, "The KV cache".
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "model/checkpoint_writer.h"
#include "model/quant_blocks.h"
#include "model/safetensors.h"

namespace tf::cpu::kernels {

enum class KvType { f32, f16, bf16, q8_0 };
inline constexpr int kKvTypes = 4;
inline constexpr KvType kDefaultKvType = KvType::f16;

inline const char* kv_type_name(KvType type) {
    switch (type) {
        case KvType::f32: return "f32";
        case KvType::f16: return "f16";
        case KvType::bf16: return "bf16";
        case KvType::q8_0: return "q8_0";
    }
    return "?";
}

// "f32", "f16", "bf16" or "q8_0"; throws std::invalid_argument naming the choices.
inline KvType parse_kv_type(const std::string& text) {
    if (text == "f32") return KvType::f32;
    if (text == "f16") return KvType::f16;
    if (text == "bf16") return KvType::bf16;
    if (text == "q8_0") return KvType::q8_0;
    throw std::invalid_argument("unknown KV cache type '" + text + "' (f32, f16, bf16 or q8_0)");
}

// Dimensions per q8_0 block, each with one fp32 scale.
inline constexpr int32_t kKvQuantBlock = 32;

// Bytes of one block of 16 positions' keys (kv_cache.h: [head_dim][16]
// elements; for q8_0 the int8 values, then [head_dim / 32][16] scales),
// and of one position's value row (q8_0: head_dim int8, then head_dim / 32
// scales). head_dim a multiple of 16, of 32 for q8_0.
inline size_t kv_key_block_bytes(KvType type, int32_t head_dim) {
    const auto d = static_cast<size_t>(head_dim);
    switch (type) {
        case KvType::f32: return 64 * d;
        case KvType::f16:
        case KvType::bf16: return 32 * d;
        case KvType::q8_0: return 16 * d + 16 * 4 * (d / kKvQuantBlock);
    }
    return 0;
}
inline size_t kv_value_row_bytes(KvType type, int32_t head_dim) { return kv_key_block_bytes(type, head_dim) / 16; }

// Quantizes n floats (a multiple of 32) as q8_0: per block of 32, scale =
// max |x| / 127 (0 for an all-zero block) and q = x / scale rounded to the
// nearest integer, ties to even. A NaN or infinity makes its block's scale
// NaN, so the attention that reads it is NaN, as it would be in fp32.
inline void quantize_q8_0(const float* x, int32_t n, int8_t* q, float* scales) {
    for (int32_t b = 0; b < n / kKvQuantBlock; ++b) {
        const float* block = x + b * kKvQuantBlock;
        float largest = 0.0f;
        bool finite = true;
        for (int32_t i = 0; i < kKvQuantBlock; ++i) {
            const float magnitude = block[i] < 0 ? -block[i] : block[i];
            if (!(magnitude <= 3.4e38f)) finite = false;
            if (magnitude > largest) largest = magnitude;
        }
        const float scale = finite ? largest / 127.0f : __builtin_nanf("");
        scales[b] = scale;
        for (int32_t i = 0; i < kKvQuantBlock; ++i) {
            float r = scale > 0.0f ? block[i] / scale : 0.0f;  // |r| <= 127 (a NaN scale: 0)
            r = __builtin_rintf(r);  // the default rounding mode: to nearest, ties to even
            q[b * kKvQuantBlock + i] = static_cast<int8_t>(r);
        }
    }
}

// fp32 -> IEEE half, rounded to nearest even (model::float_to_fp16), but
// finite values beyond the half range and infinities become +-65504; NaN
// stays a quiet NaN.
inline uint16_t f32_to_f16_bits(float value) {
    const uint16_t half = model::float_to_fp16(value);
    return (half & 0x7FFFu) == 0x7C00u ? static_cast<uint16_t>((half & 0x8000u) | 0x7BFFu) : half;
}

// IEEE half -> fp32, exact (as VCVTPH2PS).
inline float f16_bits_to_f32(uint16_t half) { return model::fp16_to_float(half); }

// fp32 -> bf16, rounded to nearest even, NaN kept quiet, subnormals kept
// (model::float_to_bf16); bf16 -> fp32, exact.
inline uint16_t f32_to_bf16_bits(float value) { return model::float_to_bf16(value); }
inline float bf16_bits_to_f32(uint16_t value) { return model::bf16_to_float(value); }

}  // namespace tf::cpu::kernels
