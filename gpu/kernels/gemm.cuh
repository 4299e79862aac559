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
// Tile shape and every index the kernel computes: gpu/kernels/gemm_tiling.h
// (shared with the host emulation in tests/gpu/gemm_emulation_test.cpp).
// The next k slice is loaded into registers while the current one is
// multiplied from shared memory.
#pragma once

#include <mma.h>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/gemm_tiling.h"

namespace tf::gpu::kernels {

// kernels

__global__ void __launch_bounds__(kGemmThreads) gemm_kernel(Gemm g) {
    using namespace nvcuda;
    __shared__ __align__(128) __nv_bfloat16 a_tile[kGemmM][kGemmTileLd];
    __shared__ __align__(128) __nv_bfloat16 w_tile[kGemmN][kGemmTileLd];
    __shared__ __align__(128) float c_tile[kGemmM][kGemmOutLd];

    const int tid = threadIdx.x, warp = tid / 32;
    const int m0 = blockIdx.y * kGemmM, n0 = blockIdx.x * kGemmN;
    const auto* a = reinterpret_cast<const __nv_bfloat16*>(g.a);
    const auto* w = reinterpret_cast<const __nv_bfloat16*>(g.w);

    uint4 a_regs[kGemmAVectors], w_regs[kGemmWVectors];
    const uint4 zero = make_uint4(0, 0, 0, 0);

    auto load = [&](int k0) {
        for (int i = 0; i < kGemmAVectors; ++i) {
            const TileCell cell = gemm_vector_cell(tid, i);
            const int m = m0 + cell.row, k = k0 + cell.col;
            a_regs[i] = gemm_vector_read(m, k, g.m_rows, g.k)
                            ? *reinterpret_cast<const uint4*>(a + static_cast<size_t>(m) * g.lda + k)
                            : zero;
        }
        for (int i = 0; i < kGemmWVectors; ++i) {
            const TileCell cell = gemm_vector_cell(tid, i);
            const int n = n0 + cell.row, k = k0 + cell.col;
            w_regs[i] = gemm_vector_read(n, k, g.n_cols, g.k)
                            ? *reinterpret_cast<const uint4*>(w + static_cast<size_t>(n) * g.ldw + k)
                            : zero;
        }
    };
    auto store = [&]() {
        for (int i = 0; i < kGemmAVectors; ++i) {
            const TileCell cell = gemm_vector_cell(tid, i);
            *reinterpret_cast<uint4*>(&a_tile[cell.row][cell.col]) = a_regs[i];
        }
        for (int i = 0; i < kGemmWVectors; ++i) {
            const TileCell cell = gemm_vector_cell(tid, i);
            *reinterpret_cast<uint4*>(&w_tile[cell.row][cell.col]) = w_regs[i];
        }
    };

    wmma::fragment<wmma::accumulator, kWmmaEdge, kWmmaEdge, kWmmaEdge, float> acc[kGemmFragmentsN];
    for (int f = 0; f < kGemmFragmentsN; ++f) wmma::fill_fragment(acc[f], 0.0f);

    load(0);
    for (int k0 = 0; k0 < g.k; k0 += kGemmK) {
        store();
        __syncthreads();
        if (k0 + kGemmK < g.k) load(k0 + kGemmK);
        for (int kk = 0; kk < kGemmK; kk += kWmmaEdge) {
            wmma::fragment<wmma::matrix_a, kWmmaEdge, kWmmaEdge, kWmmaEdge, __nv_bfloat16, wmma::row_major> a_frag;
            wmma::load_matrix_sync(a_frag, &a_tile[gemm_warp_row(warp)][kk], kGemmTileLd);
            for (int f = 0; f < kGemmFragmentsN; ++f) {
                // w_tile[n][k] read column-major is the k x n operand wᵀ.
                wmma::fragment<wmma::matrix_b, kWmmaEdge, kWmmaEdge, kWmmaEdge, __nv_bfloat16, wmma::col_major> b_frag;
                wmma::load_matrix_sync(b_frag, &w_tile[gemm_fragment_col(f)][kk], kGemmTileLd);
                wmma::mma_sync(acc[f], a_frag, b_frag, acc[f]);
            }
        }
        __syncthreads();
    }
    for (int f = 0; f < kGemmFragmentsN; ++f) {
        wmma::store_matrix_sync(&c_tile[gemm_warp_row(warp)][gemm_fragment_col(f)], acc[f], kGemmOutLd,
                                wmma::mem_row_major);
    }
    __syncthreads();
    for (int i = tid; i < kGemmM * kGemmN; i += kGemmThreads) {
        const TileCell cell = gemm_output_cell(i);
        const int m = m0 + cell.row, n = n0 + cell.col;
        if (m >= g.m_rows || n >= g.n_cols) continue;
        float value = c_tile[cell.row][cell.col];
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
    const dim3 grid(static_cast<unsigned>(gemm_column_tiles(g.n_cols)),
                    static_cast<unsigned>(gemm_row_tiles(g.m_rows)));
    TF_GPU_REQUIRE(grid.y <= 65535u, "gemm: too many rows for one launch");
    gemm_kernel<<<grid, kGemmThreads, 0, stream>>>(g);
    TF_CUDA_CHECK_LAUNCH("gemm_kernel");
}

}  // namespace tf::gpu::kernels
