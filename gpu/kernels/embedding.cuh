// Embedding gather: one thread block per row.
#pragma once

#include "gpu/kernels/common.cuh"

namespace tf::gpu::kernels {

// kernels

__global__ void embed_kernel(const bf16_bits* table, int32_t hidden, const DeviceRow* rows, float* x) {
    const DeviceRow row = rows[blockIdx.x];
    float* out = x + static_cast<size_t>(blockIdx.x) * hidden;
    const bf16_bits* source = table + static_cast<size_t>(row.token) * hidden;
    for (int32_t i = threadIdx.x; i < hidden; i += blockDim.x) out[i] = row.valid ? bf16_to_float(source[i]) : 0.0f;
}

// launchers

void embed(const bf16_bits* table, int32_t hidden, const DeviceRow* rows, int32_t count, float* x, cudaStream_t stream) {
    TF_GPU_REQUIRE(count > 0 && hidden > 0, "embed: empty shape");
    embed_kernel<<<count, 256, 0, stream>>>(table, hidden, rows, x);
    TF_CUDA_CHECK_LAUNCH("embed_kernel");
}

}  // namespace tf::gpu::kernels
