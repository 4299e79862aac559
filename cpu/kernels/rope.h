// Rotary position embedding, HF "rotate_half" form (Llama, Mistral, Qwen2,
// Qwen3): x'[i] = x[i] cos - x[i+d/2] sin, x'[i+d/2] = x[i+d/2] cos + x[i] sin,
// with angle = position * inv_freq[i] (inv_freq from model/rope.h).
#pragma once

#include <cassert>
#include <cmath>
#include <cstdint>
#include <vector>

namespace tf::cpu::kernels {

// kernels

// cos and sin of position * inv_freq[i], for i < half.
inline void rope_angles(const float* inv_freq, int32_t half, int32_t position, float* cos_out, float* sin_out) {
    for (int32_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(position) * inv_freq[i];  // fp32 product, as transformers
        cos_out[i] = static_cast<float>(std::cos(static_cast<double>(angle)));
        sin_out[i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
}

inline void rope_head(float* x, const float* cos_v, const float* sin_v, int32_t half) {
    for (int32_t i = 0; i < half; ++i) {
        const float a = x[i], b = x[i + half];
        x[i] = a * cos_v[i] - b * sin_v[i];
        x[i + half] = b * cos_v[i] + a * sin_v[i];
    }
}

// launchers

// Rotates `heads` heads of head_dim floats each, laid out one after another.
inline void rope(float* x, int32_t heads, int32_t head_dim, const float* cos_v, const float* sin_v) {
    assert(head_dim % 2 == 0);
    for (int32_t h = 0; h < heads; ++h) rope_head(x + static_cast<size_t>(h) * head_dim, cos_v, sin_v, head_dim / 2);
}

}  // namespace tf::cpu::kernels
