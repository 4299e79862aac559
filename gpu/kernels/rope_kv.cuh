// Per row, after the q/k/v projection: Qwen3's RMSNorm of each q and k head,
// RoPE of q and k (rotate_half, as cpu/kernels/rope.h: angle = position *
// inv_freq[i] as an fp32 product, cos and sin computed in double and rounded
// to float), then k and v stored as bf16 in the layer's KV pools at the
// row's slot. One block per row; warp w takes heads w, w + 8, ... (q heads
// first, then kv heads); a head's norm is one warp's fixed-order sum.
#pragma once

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/kv_addressing.h"

namespace tf::gpu::kernels {

constexpr int kRopeWarps = 8;

// kernels

__global__ void __launch_bounds__(kRopeWarps * 32)
qk_rope_kv_kernel(float* qkv, int32_t ld_qkv, const float* q_norm, const float* k_norm, float eps,
                  const float* inv_freq, const DeviceRow* rows, const int32_t* tables, KvShape shape,
                  bf16_bits* layer_keys, bf16_bits* layer_values) {
    __shared__ float head[kRopeWarps][kMaxHeadDim];
    const DeviceRow row = rows[blockIdx.x];
    if (!row.valid) return;  // padding row: nothing to store
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int32_t head_dim = shape.head_dim, half = head_dim / 2;
    float* q = qkv + static_cast<size_t>(blockIdx.x) * ld_qkv;
    float* k = q + static_cast<size_t>(shape.heads) * head_dim;
    const float* v = k + static_cast<size_t>(shape.kv_heads) * head_dim;
    const int64_t block = tables[row.table_offset + kv_table_entry(row.position)];
    const int32_t slot = kv_slot(row.position);
    float* buffer = head[warp];

    for (int32_t h = warp; h < shape.heads + shape.kv_heads; h += kRopeWarps) {
        const bool is_q = h < shape.heads;
        const int32_t kv_head = h - shape.heads;
        float* source = is_q ? q + static_cast<size_t>(h) * head_dim : k + static_cast<size_t>(kv_head) * head_dim;
        const float* norm = is_q ? q_norm : k_norm;
        if (norm) {
            float sum = 0.0f;
            for (int32_t d = lane; d < head_dim; d += 32) sum += source[d] * source[d];
            sum = __shfl_sync(kFullMask, warp_reduce(sum, SumOp{}), 0);
            const float inv = 1.0f / sqrtf(sum / static_cast<float>(head_dim) + eps);
            for (int32_t d = lane; d < head_dim; d += 32) buffer[d] = norm[d] * (source[d] * inv);
        } else {
            for (int32_t d = lane; d < head_dim; d += 32) buffer[d] = source[d];
        }
        __syncwarp();
        const size_t cache_at = kv_row_offset(block, is_q ? 0 : kv_head, slot, shape.kv_heads, head_dim);
        for (int32_t i = lane; i < half; i += 32) {
            const float angle = static_cast<float>(row.position) * inv_freq[i];
            const float c = static_cast<float>(cos(static_cast<double>(angle)));
            const float s = static_cast<float>(sin(static_cast<double>(angle)));
            const float x0 = buffer[i], x1 = buffer[i + half];
            const float y0 = x0 * c - x1 * s;
            const float y1 = x1 * c + x0 * s;
            if (is_q) {
                source[i] = y0;
                source[i + half] = y1;
            } else {
                layer_keys[cache_at + i] = float_to_bf16(y0);
                layer_keys[cache_at + i + half] = float_to_bf16(y1);
            }
        }
        if (!is_q) {
            const float* value = v + static_cast<size_t>(kv_head) * head_dim;
            for (int32_t d = lane; d < head_dim; d += 32) layer_values[cache_at + d] = float_to_bf16(value[d]);
        }
        __syncwarp();  // the buffer is rewritten by the warp's next head
    }
}

// launchers

void qk_rope_kv(float* qkv, int32_t ld_qkv, const float* q_norm, const float* k_norm, float eps,
                const float* inv_freq, const DeviceRow* rows, int32_t count, const int32_t* tables,
                const KvShape& shape, bf16_bits* layer_keys, bf16_bits* layer_values, cudaStream_t stream) {
    TF_GPU_REQUIRE(count > 0, "qk_rope_kv: no rows");
    TF_GPU_REQUIRE(shape.head_dim > 0 && shape.head_dim % 2 == 0 && shape.head_dim <= kMaxHeadDim,
                   "qk_rope_kv: head_dim must be even and at most kMaxHeadDim");
    TF_GPU_REQUIRE(shape.kv_heads > 0 && shape.heads % shape.kv_heads == 0, "qk_rope_kv: heads not a multiple of kv_heads");
    TF_GPU_REQUIRE(ld_qkv >= (shape.heads + 2 * shape.kv_heads) * shape.head_dim, "qk_rope_kv: qkv row too short");
    TF_GPU_REQUIRE((q_norm == nullptr) == (k_norm == nullptr), "qk_rope_kv: q_norm and k_norm come together");
    qk_rope_kv_kernel<<<count, kRopeWarps * 32, 0, stream>>>(qkv, ld_qkv, q_norm, k_norm, eps, inv_freq, rows, tables,
                                                             shape, layer_keys, layer_values);
    TF_CUDA_CHECK_LAUNCH("qk_rope_kv_kernel");
}

}  // namespace tf::gpu::kernels
