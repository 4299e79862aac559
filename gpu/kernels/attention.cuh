// Attention over the paged bf16 KV cache, in two kernels:
//  1. split: per (row, q head, split of kAttentionSplit absolute positions
//     intersected with the row's [first, position]): scores q·k * scale
//     (one warp per key, a fixed-order warp sum), their max, weights
//     exp(score - max) and their sum (block_reduce), and the unnormalised
//     weighted sum of values per dimension (one thread per dimension, keys
//     in position order). Written as (max, sum) and acc[head_dim].
//  2. combine: per (row, q head), the splits in order: max of maxes, sum of
//     sums scaled by exp(max_j - max), acc likewise, divided by that sum.
// A row's splits depend only on its own key range, so its result never
// depends on the batch; `workers` blocks per (row, head) take splits j,
// j + workers, ... and only change who computes a split, not how.
#pragma once

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/kv_addressing.h"

namespace tf::gpu::kernels {

constexpr int kAttentionThreads = 128;
constexpr int kCombineThreads = 128;

// kernels

__global__ void __launch_bounds__(kAttentionThreads)
attention_split_kernel(const float* qkv, int32_t ld_qkv, const bf16_bits* keys, const bf16_bits* values,
                       const DeviceRow* rows, const int32_t* tables, KvShape shape, float scale, float* partial_ml,
                       float* partial_acc) {
    __shared__ float q[kMaxHeadDim];
    __shared__ float weights[kAttentionSplit];
    __shared__ float shared[33];
    __shared__ int32_t blocks[kSplitBlocks];
    const DeviceRow row = rows[blockIdx.z];
    if (static_cast<int32_t>(blockIdx.x) >= row.split_count) return;  // also every padding row
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, warps = kAttentionThreads / 32;
    const int32_t head_dim = shape.head_dim, h = blockIdx.y, kv_head = kv_head_of(h, shape.heads, shape.kv_heads);
    const float* q_row = qkv + static_cast<size_t>(blockIdx.z) * ld_qkv + static_cast<size_t>(h) * head_dim;
    for (int32_t d = tid; d < head_dim; d += kAttentionThreads) q[d] = q_row[d];

    for (int32_t j = blockIdx.x; j < row.split_count; j += gridDim.x) {
        const SplitKeys keys_of_split = split_keys(row, j);
        const int32_t split_start = keys_of_split.start, p0 = keys_of_split.p0;
        const int32_t n = keys_of_split.p1 - p0 + 1;
        if (tid < kSplitBlocks) {
            const int32_t entry = split_table_entry(row, split_start, tid);
            blocks[tid] = entry >= 0 ? tables[row.table_offset + entry] : 0;
        }
        __syncthreads();  // q and blocks ready
        auto at = [&](int32_t p) {  // element offset of position p's head row in a pool
            return kv_row_offset(blocks[(p - split_start) / kBlockPositions], kv_head, kv_slot(p), shape.kv_heads,
                                 head_dim);
        };
        for (int32_t t = warp; t < n; t += warps) {
            const bf16_bits* key = keys + at(p0 + t);
            float dot = 0.0f;
            for (int32_t d = lane; d < head_dim; d += 32) dot += q[d] * bf16_to_float(key[d]);
            dot = warp_reduce(dot, SumOp{});
            if (lane == 0) weights[t] = dot * scale;
        }
        __syncthreads();
        float best = -INFINITY;
        for (int32_t t = tid; t < n; t += kAttentionThreads) best = fmaxf(best, weights[t]);
        best = block_reduce(best, -INFINITY, shared, MaxOp{});
        float sum = 0.0f;
        for (int32_t t = tid; t < n; t += kAttentionThreads) {
            const float e = expf(weights[t] - best);
            weights[t] = e;
            sum += e;
        }
        sum = block_reduce(sum, 0.0f, shared, SumOp{});  // also orders the weights' writes before their reads
        const size_t slot = partial_slot(row, j, shape.heads, h);
        for (int32_t d = tid; d < head_dim; d += kAttentionThreads) {
            float acc = 0.0f;
            for (int32_t t = 0; t < n; ++t) acc += weights[t] * bf16_to_float(values[at(p0 + t) + d]);
            partial_acc[slot * head_dim + d] = acc;
        }
        if (tid == 0) {
            partial_ml[2 * slot] = best;
            partial_ml[2 * slot + 1] = sum;
        }
        __syncthreads();  // weights and blocks are rewritten by the next split
    }
}

__global__ void __launch_bounds__(kCombineThreads)
attention_combine_kernel(const DeviceRow* rows, KvShape shape, const float* partial_ml, const float* partial_acc,
                         bf16_bits* out, int32_t ldo) {
    const DeviceRow row = rows[blockIdx.y];
    const int32_t h = blockIdx.x, head_dim = shape.head_dim;
    bf16_bits* target = out + static_cast<size_t>(blockIdx.y) * ldo + static_cast<size_t>(h) * head_dim;
    if (row.split_count == 0) {  // padding row
        for (int32_t d = threadIdx.x; d < head_dim; d += kCombineThreads) target[d] = 0;
        return;
    }
    auto slot = [&](int32_t j) { return partial_slot(row, j, shape.heads, h); };
    float best = -INFINITY;
    for (int32_t j = 0; j < row.split_count; ++j) best = fmaxf(best, partial_ml[2 * slot(j)]);
    float sum = 0.0f;
    for (int32_t j = 0; j < row.split_count; ++j) sum += partial_ml[2 * slot(j) + 1] * expf(partial_ml[2 * slot(j)] - best);
    for (int32_t d = threadIdx.x; d < head_dim; d += kCombineThreads) {
        float acc = 0.0f;
        for (int32_t j = 0; j < row.split_count; ++j) {
            acc += partial_acc[slot(j) * head_dim + d] * expf(partial_ml[2 * slot(j)] - best);
        }
        target[d] = float_to_bf16(acc / sum);
    }
}

// launchers

void attention(const float* qkv, int32_t ld_qkv, const bf16_bits* layer_keys, const bf16_bits* layer_values,
               const DeviceRow* rows, int32_t count, const int32_t* tables, const KvShape& shape, int32_t workers,
               float* partial_ml, float* partial_acc, bf16_bits* out, int32_t ldo, cudaStream_t stream) {
    TF_GPU_REQUIRE(count > 0 && workers > 0, "attention: empty launch");
    TF_GPU_REQUIRE(shape.head_dim > 0 && shape.head_dim <= kMaxHeadDim, "attention: head_dim above kMaxHeadDim");
    TF_GPU_REQUIRE(shape.kv_heads > 0 && shape.heads % shape.kv_heads == 0, "attention: heads not a multiple of kv_heads");
    TF_GPU_REQUIRE(ldo >= shape.heads * shape.head_dim, "attention: output row too short");
    TF_GPU_REQUIRE(count <= 65535 && shape.heads <= 65535, "attention: grid too large");
    const float scale = 1.0f / sqrtf(static_cast<float>(shape.head_dim));
    const dim3 split_grid(static_cast<unsigned>(workers), static_cast<unsigned>(shape.heads), static_cast<unsigned>(count));
    attention_split_kernel<<<split_grid, kAttentionThreads, 0, stream>>>(qkv, ld_qkv, layer_keys, layer_values, rows,
                                                                         tables, shape, scale, partial_ml, partial_acc);
    TF_CUDA_CHECK_LAUNCH("attention_split_kernel");
    const dim3 combine_grid(static_cast<unsigned>(shape.heads), static_cast<unsigned>(count));
    attention_combine_kernel<<<combine_grid, kCombineThreads, 0, stream>>>(rows, shape, partial_ml, partial_acc, out, ldo);
    TF_CUDA_CHECK_LAUNCH("attention_combine_kernel");
}

}  // namespace tf::gpu::kernels
