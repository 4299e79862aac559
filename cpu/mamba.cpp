#include "cpu/mamba.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace tf::cpu::mamba {

namespace {

size_t padded16(int32_t n) { return (static_cast<size_t>(n) + 15) / 16 * 16; }

// SiLU through exp16: v / (1 + e^-v), n values.
void silu(float* v, int32_t n, kernels::Exp16Fn exp16, float* scratch) {
    const size_t padded = padded16(n);
    for (int32_t i = 0; i < n; ++i) scratch[i] = -v[i];
    std::fill(scratch + n, scratch + padded, 0.0f);
    exp16(scratch, padded, scratch);
    for (int32_t i = 0; i < n; ++i) v[i] = v[i] / (1.0f + scratch[i]);
}

}  // namespace

void conv_row(const model::MambaConfig& m, const float* weight, const float* bias, const float* inputs,
              kernels::Exp16Fn exp16, float* scratch, float* out) {
    const int32_t channels = m.conv_dim(), taps = m.conv_kernel;
    for (int32_t c = 0; c < channels; ++c) {
        const float* w = weight + static_cast<size_t>(c) * taps;
        float sum = bias ? bias[c] : 0.0f;
        for (int32_t j = 0; j < taps; ++j) sum += w[j] * inputs[static_cast<size_t>(j) * channels + c];
        out[c] = sum;
    }
    silu(out, channels, exp16, scratch);
}

void time_steps(const model::MambaConfig& m, const float* raw, const float* dt_bias, float* dt) {
    for (int32_t h = 0; h < m.num_heads; ++h) {
        const float v = raw[h] + dt_bias[h];
        // torch's softplus: the input itself above 20, where log1p(e^v) == v in fp32.
        const float soft = v > 20.0f ? v : std::log1p(std::exp(v));
        dt[h] = std::clamp(soft, m.dt_min, m.dt_max);
    }
}

void scan_heads(const model::MambaConfig& m, kernels::ScanStateRowFn scan_row, const float* A, const float* D,
                const float* xbc, const float* dt, const float* from, float* to, float* y, int32_t first_head,
                int32_t end_head) {
    const int32_t P = m.head_dim, N = m.state_size, heads_per_group = m.num_heads / m.groups;
    const float* x = xbc;
    const float* B = xbc + m.inner();
    const float* C = B + static_cast<size_t>(m.groups) * N;
    for (int32_t h = first_head; h < end_head; ++h) {
        const int32_t g = h / heads_per_group;
        const float* Bg = B + static_cast<size_t>(g) * N;
        const float* Cg = C + static_cast<size_t>(g) * N;
        const float decay = std::exp(dt[h] * A[h]);
        for (int32_t p = 0; p < P; ++p) {
            const size_t at = (static_cast<size_t>(h) * P + p) * N;
            const float* s_in = from + at;
            float* s = to + at;
            const float xp = x[static_cast<size_t>(h) * P + p];
            const float dtx = dt[h] * xp;
            if (N % 16 == 0) {
                const float dot = scan_row(s_in, s, decay, dtx, Bg, Cg, N);
                if (y) y[static_cast<size_t>(h) * P + p] = dot + D[h] * xp;
                continue;
            }
            // s . C as eight chains by n mod 8, added pairwise: a fixed order
            // (the same bits on every path), and no one chain of N dependent adds.
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int32_t n = 0;
            for (; n + 8 <= N; n += 8) {
                for (int32_t k = 0; k < 8; ++k) {
                    s[n + k] = s_in[n + k] * decay + dtx * Bg[n + k];
                    acc[k] += s[n + k] * Cg[n + k];
                }
            }
            for (; n < N; ++n) {
                s[n] = s_in[n] * decay + dtx * Bg[n];
                acc[n % 8] += s[n] * Cg[n];
            }
            const float dot = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
            if (y) y[static_cast<size_t>(h) * P + p] = dot + D[h] * xp;
        }
    }
}

void gated_norm_row(const model::MambaConfig& m, const float* z, const float* weight, float eps, kernels::Exp16Fn exp16,
                    float* scratch, float* y) {
    const int32_t inner = m.inner(), group = inner / m.groups;
    // The gate y * silu(z), with e^-z for all channels in one exp16 call.
    const size_t padded = padded16(inner);
    for (int32_t i = 0; i < inner; ++i) scratch[i] = -z[i];
    std::fill(scratch + inner, scratch + padded, 0.0f);
    exp16(scratch, padded, scratch);
    for (int32_t i = 0; i < inner; ++i) y[i] = y[i] * (z[i] / (1.0f + scratch[i]));
    for (int32_t g0 = 0; g0 < inner; g0 += group) {
        float sum = 0.0f;
        for (int32_t i = g0; i < g0 + group; ++i) sum += y[i] * y[i];
        const float inv = 1.0f / std::sqrt(sum / static_cast<float>(group) + eps);
        for (int32_t i = g0; i < g0 + group; ++i) y[i] = weight[i] * (y[i] * inv);
    }
}

}  // namespace tf::cpu::mamba
