// Copies whole KV blocks (keys and values of every layer) between streams:
// Backend::copy_prefix on the device. One block per (pair, layer).
#pragma once

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/kv_addressing.h"

namespace tf::gpu::kernels {

// kernels

__global__ void copy_kv_blocks_kernel(const int32_t* pairs, int64_t num_blocks, int64_t block_elems,
                                      bf16_bits* keys, bf16_bits* values) {
    const int64_t source = pairs[2 * blockIdx.x], target = pairs[2 * blockIdx.x + 1];
    const int64_t layer = blockIdx.y;
    const int64_t vectors = block_elems / 8;  // 16-byte vectors
    for (bf16_bits* pool : {keys, values}) {
        const auto* from =
            reinterpret_cast<const uint4*>(pool + kv_block_offset(layer, source, num_blocks, block_elems));
        auto* to = reinterpret_cast<uint4*>(pool + kv_block_offset(layer, target, num_blocks, block_elems));
        for (int64_t e = threadIdx.x; e < vectors; e += blockDim.x) to[e] = from[e];
    }
}

// launchers

void copy_kv_blocks(const int32_t* pairs, int32_t count, int32_t layers, const KvShape& shape, bf16_bits* keys,
                    bf16_bits* values, cudaStream_t stream) {
    if (count == 0) return;
    TF_GPU_REQUIRE(count > 0 && layers > 0 && layers <= 65535, "copy_kv_blocks: bad shape");
    TF_GPU_REQUIRE(shape.block_elems() % 8 == 0 && aligned16(keys) && aligned16(values),
                   "copy_kv_blocks: blocks must be whole 16-byte vectors");
    copy_kv_blocks_kernel<<<dim3(static_cast<unsigned>(count), static_cast<unsigned>(layers)), 256, 0, stream>>>(
        pairs, shape.num_blocks, shape.block_elems(), keys, values);
    TF_CUDA_CHECK_LAUNCH("copy_kv_blocks_kernel");
}

}  // namespace tf::gpu::kernels
