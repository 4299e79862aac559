// The MLP's activation: silu(gate) * up, elementwise, rounded to bf16 for
// the down projection. One block per row.
#pragma once

#include "gpu/kernels/common.cuh"

namespace tf::gpu::kernels {

// kernels

__global__ void swiglu_kernel(const float* gate_up, int32_t inter, bf16_bits* out) {
    const float* gate = gate_up + static_cast<size_t>(blockIdx.x) * 2 * inter;
    const float* up = gate + inter;
    bf16_bits* target = out + static_cast<size_t>(blockIdx.x) * inter;
    for (int32_t i = threadIdx.x; i < inter; i += blockDim.x) {
        const float g = gate[i];
        target[i] = float_to_bf16(g / (1.0f + expf(-g)) * up[i]);
    }
}

// launchers

void swiglu(const float* gate_up, int32_t inter, int32_t count, bf16_bits* out, cudaStream_t stream) {
    TF_GPU_REQUIRE(count > 0 && inter > 0, "swiglu: empty shape");
    swiglu_kernel<<<count, 256, 0, stream>>>(gate_up, inter, out);
    TF_CUDA_CHECK_LAUNCH("swiglu_kernel");
}

}  // namespace tf::gpu::kernels
