// RMSNorm (y = w * (x / sqrt(mean(x^2) + eps))) in fp32, rounded to bf16 for
// the next GEMM: one block of kNormThreads per row, the sum of squares
// reduced in the fixed order of block_reduce.
#pragma once

#include "gpu/kernels/common.cuh"

namespace tf::gpu::kernels {

constexpr int kNormThreads = 256;

// kernels

__global__ void __launch_bounds__(kNormThreads)
rmsnorm_kernel(const float* x, int32_t ldx, const float* weight, int32_t dim, float eps, const int32_t* row_index,
               bf16_bits* out, int32_t ldo) {
    __shared__ float shared[33];
    const int32_t o = blockIdx.x;
    const int32_t r = row_index ? row_index[o] : o;
    const float* row = x + static_cast<size_t>(r) * ldx;
    float sum = 0.0f;
    for (int32_t i = threadIdx.x; i < dim; i += blockDim.x) sum += row[i] * row[i];
    sum = block_reduce(sum, 0.0f, shared, SumOp{});
    const float inv = 1.0f / sqrtf(sum / static_cast<float>(dim) + eps);
    bf16_bits* target = out + static_cast<size_t>(o) * ldo;
    for (int32_t i = threadIdx.x; i < dim; i += blockDim.x) target[i] = float_to_bf16(weight[i] * (row[i] * inv));
}

// launchers

void rmsnorm(const float* x, int32_t ldx, const float* weight, int32_t dim, float eps, const int32_t* row_index,
             int32_t count, bf16_bits* out, int32_t ldo, cudaStream_t stream) {
    TF_GPU_REQUIRE(count > 0 && dim > 0, "rmsnorm: empty shape");
    TF_GPU_REQUIRE(ldx >= dim && ldo >= dim, "rmsnorm: leading dimensions shorter than a row");
    rmsnorm_kernel<<<count, kNormThreads, 0, stream>>>(x, ldx, weight, dim, eps, row_index, out, ldo);
    TF_CUDA_CHECK_LAUNCH("rmsnorm_kernel");
}

}  // namespace tf::gpu::kernels
