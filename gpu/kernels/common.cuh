// Device helpers shared by the kernels: bf16 bits <-> float, and warp and
// block reductions whose order of operations is fixed by the block size
// alone (a shuffle tree in each warp, then the warps' results by the first
// warp in the same tree), never by timing: no atomics on floats anywhere.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "gpu/check.h"
#include "gpu/kernels/launch.h"

namespace tf::gpu::kernels {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float bf16_to_float(bf16_bits bits) {
    return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}

// Round to nearest even (the conversion the CUDA headers implement).
__device__ __forceinline__ bf16_bits float_to_bf16(float value) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

struct SumOp {
    template <typename T>
    __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
    __device__ __forceinline__ unsigned long long operator()(unsigned long long a, unsigned long long b) const {
        return a > b ? a : b;
    }
};
struct MinOp {
    __device__ __forceinline__ unsigned long long operator()(unsigned long long a, unsigned long long b) const {
        return a < b ? a : b;
    }
};

// Lane 0 ends with op over the warp's 32 values, combined as a fixed tree.
template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T value, Op op) {
    for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_down_sync(kFullMask, value, offset));
    return value;
}

// op over one value per thread of the block, returned to every thread.
// blockDim.x must be a multiple of 32; `shared` holds 33 values. Every
// thread of the block must call it (it synchronises).
template <typename T, typename Op>
__device__ T block_reduce(T value, T identity, T* shared, Op op) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    value = warp_reduce(value, op);
    if (lane == 0) shared[warp] = value;
    __syncthreads();
    if (warp == 0) {
        T mine = lane < warps ? shared[lane] : identity;
        mine = warp_reduce(mine, op);
        if (lane == 0) shared[32] = mine;
    }
    __syncthreads();
    const T result = shared[32];
    __syncthreads();  // `shared` may be reused at once
    return result;
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

inline unsigned ceil_div(int64_t a, int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }

}  // namespace tf::gpu::kernels
