// y = a · wᵀ (+ bias), bf16 in, fp32 accumulation on tensor cores (WMMA
// m16n16k16), fp32 out.
//
// Batch invariance by construction: one tile shape (kGemmM x kGemmN) for
// every m_rows, one sequential loop over k in steps of kGemmK (no split-K),
// rows past m_rows zero-filled in shared memory and never written. An output
// element is the same chain of tensor-core steps over the same k order
// whatever the other rows of its tile hold, so a row's result never depends
// on the batch.
//
// Tile: 4 warps; warp w computes rows 16w..16w+15 of the 64-row tile against
// all 32 columns (two accumulator fragments). The next k slice is loaded
// into registers while the current one is multiplied from shared memory.
#pragma once

#include <mma.h>

#include "gpu/kernels/common.cuh"

namespace tf::gpu::kernels {

constexpr int kGemmM = 64;
constexpr int kGemmN = 32;
constexpr int kGemmK = 64;
constexpr int kGemmPad = 8;  // bf16 elements of padding per shared row (keeps 16-byte rows, spreads banks)
constexpr int kGemmThreads = 128;

// kernels

__global__ void __launch_bounds__(kGemmThreads) gemm_kernel(Gemm g) {
    using namespace nvcuda;
    __shared__ __align__(128) __nv_bfloat16 a_tile[kGemmM][kGemmK + kGemmPad];
    __shared__ __align__(128) __nv_bfloat16 w_tile[kGemmN][kGemmK + kGemmPad];
    __shared__ __align__(128) float c_tile[kGemmM][kGemmN + 4];

    const int tid = threadIdx.x, warp = tid / 32;
    const int m0 = blockIdx.y * kGemmM, n0 = blockIdx.x * kGemmN;
    const auto* a = reinterpret_cast<const __nv_bfloat16*>(g.a);
    const auto* w = reinterpret_cast<const __nv_bfloat16*>(g.w);

    // 16-byte vectors (8 bf16) per tile: a 64 x 64 slice is 512 of them, four
    // per thread; a 32 x 64 slice of w is 256, two per thread.
    constexpr int kVectorsPerRow = kGemmK / 8;
    constexpr int kAVectors = kGemmM * kVectorsPerRow / kGemmThreads;
    constexpr int kWVectors = kGemmN * kVectorsPerRow / kGemmThreads;
    uint4 a_regs[kAVectors], w_regs[kWVectors];
    const uint4 zero = make_uint4(0, 0, 0, 0);

    auto load = [&](int k0) {
        for (int i = 0; i < kAVectors; ++i) {
            const int v = tid + i * kGemmThreads, r = v / kVectorsPerRow, c = (v % kVectorsPerRow) * 8;
            const int m = m0 + r, k = k0 + c;
            a_regs[i] = (m < g.m_rows && k < g.k)
                            ? *reinterpret_cast<const uint4*>(a + static_cast<size_t>(m) * g.lda + k)
                            : zero;
        }
        for (int i = 0; i < kWVectors; ++i) {
            const int v = tid + i * kGemmThreads, r = v / kVectorsPerRow, c = (v % kVectorsPerRow) * 8;
            const int n = n0 + r, k = k0 + c;
            w_regs[i] = (n < g.n_cols && k < g.k)
                            ? *reinterpret_cast<const uint4*>(w + static_cast<size_t>(n) * g.ldw + k)
                            : zero;
        }
    };
    auto store = [&]() {
        for (int i = 0; i < kAVectors; ++i) {
            const int v = tid + i * kGemmThreads, r = v / kVectorsPerRow, c = (v % kVectorsPerRow) * 8;
            *reinterpret_cast<uint4*>(&a_tile[r][c]) = a_regs[i];
        }
        for (int i = 0; i < kWVectors; ++i) {
            const int v = tid + i * kGemmThreads, r = v / kVectorsPerRow, c = (v % kVectorsPerRow) * 8;
            *reinterpret_cast<uint4*>(&w_tile[r][c]) = w_regs[i];
        }
    };

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
    wmma::fill_fragment(acc[0], 0.0f);
    wmma::fill_fragment(acc[1], 0.0f);

    load(0);
    for (int k0 = 0; k0 < g.k; k0 += kGemmK) {
        store();
        __syncthreads();
        if (k0 + kGemmK < g.k) load(k0 + kGemmK);
        for (int kk = 0; kk < kGemmK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a_frag;
            wmma::load_matrix_sync(a_frag, &a_tile[warp * 16][kk], kGemmK + kGemmPad);
            for (int f = 0; f < 2; ++f) {
                // w_tile[n][k] read column-major is the k x n operand wᵀ.
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b_frag;
                wmma::load_matrix_sync(b_frag, &w_tile[f * 16][kk], kGemmK + kGemmPad);
                wmma::mma_sync(acc[f], a_frag, b_frag, acc[f]);
            }
        }
        __syncthreads();
    }
    for (int f = 0; f < 2; ++f) {
        wmma::store_matrix_sync(&c_tile[warp * 16][f * 16], acc[f], kGemmN + 4, wmma::mem_row_major);
    }
    __syncthreads();
    for (int i = tid; i < kGemmM * kGemmN; i += kGemmThreads) {
        const int r = i / kGemmN, c = i % kGemmN, m = m0 + r, n = n0 + c;
        if (m >= g.m_rows || n >= g.n_cols) continue;
        float value = c_tile[r][c];
        if (g.bias) value += g.bias[n];
        float* y = g.y + static_cast<size_t>(m) * g.ldy + n;
        if (g.accumulate) {
            *y += value;
        } else {
            *y = value;
        }
    }
}

// launchers

void gemm(const Gemm& g, cudaStream_t stream) {
    TF_GPU_REQUIRE(g.m_rows > 0 && g.n_cols > 0 && g.k > 0, "gemm: empty shape");
    TF_GPU_REQUIRE(g.k % 8 == 0 && g.lda % 8 == 0 && g.ldw % 8 == 0,
                   "gemm: k and the leading dimensions of a and w must be multiples of 8 (16-byte vectors)");
    TF_GPU_REQUIRE(g.lda >= g.k && g.ldw >= g.k && g.ldy >= g.n_cols, "gemm: leading dimension shorter than a row");
    TF_GPU_REQUIRE(aligned16(g.a) && aligned16(g.w), "gemm: a and w must be 16-byte aligned");
    TF_GPU_REQUIRE(g.y != nullptr, "gemm: no output");
    const dim3 grid(ceil_div(g.n_cols, kGemmN), ceil_div(g.m_rows, kGemmM));
    TF_GPU_REQUIRE(grid.y <= 65535u, "gemm: too many rows for one launch");
    gemm_kernel<<<grid, kGemmThreads, 0, stream>>>(g);
    TF_CUDA_CHECK_LAUNCH("gemm_kernel");
}

}  // namespace tf::gpu::kernels
