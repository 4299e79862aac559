// The GEMM kernel's tile shape and index arithmetic (gpu/kernels/gemm.cuh),
// as plain C++17 that the kernel and its host emulation
// (tests/gpu/gemm_emulation_test.cpp) both call.
//
// A thread block computes a kGemmM x kGemmN tile of y. Per k slice of
// kGemmK, each of its kGemmThreads threads moves 16-byte vectors (8 bf16)
// of a and w into shared tiles; warp w multiplies rows 16w..16w+15 of the
// a tile against kGemmFragmentsN column fragments of 16. The tile then goes
// through shared memory to y, one element per thread per step.
#pragma once

#include <cstdint>

#include "gpu/kernels/host_device.h"

namespace tf::gpu::kernels {

constexpr int kGemmM = 64;
constexpr int kGemmN = 32;
constexpr int kGemmK = 64;
constexpr int kGemmPad = 8;  // bf16 elements of padding per shared row: rows stay 16-byte vectors, banks spread
constexpr int kGemmThreads = 128;

constexpr int kWmmaEdge = 16;  // WMMA m16n16k16
constexpr int kGemmWarps = kGemmThreads / 32;
constexpr int kGemmFragmentsN = kGemmN / kWmmaEdge;
constexpr int kGemmTileLd = kGemmK + kGemmPad;  // bf16 elements per row of the shared a and w tiles
constexpr int kGemmOutLd = kGemmN + 4;          // floats per row of the shared output tile
constexpr int kGemmVectorsPerRow = kGemmK / 8;  // 16-byte vectors in one k slice of a row
constexpr int kGemmAVectors = kGemmM * kGemmVectorsPerRow / kGemmThreads;  // per thread and slice
constexpr int kGemmWVectors = kGemmN * kGemmVectorsPerRow / kGemmThreads;

// The shape assumptions the kernel's loops and WMMA calls rest on.
static_assert(kGemmM == kGemmWarps * kWmmaEdge, "each warp owns 16 rows of the tile");
static_assert(kGemmN % kWmmaEdge == 0 && kGemmK % kWmmaEdge == 0, "the tile is whole WMMA fragments");
static_assert(kGemmM * kGemmVectorsPerRow % kGemmThreads == 0, "every thread moves the same number of a vectors");
static_assert(kGemmN * kGemmVectorsPerRow % kGemmThreads == 0, "every thread moves the same number of w vectors");
static_assert(kGemmThreads % kGemmN == 0, "the epilogue's rows advance by whole tile rows");
// load_matrix_sync / store_matrix_sync: ldm a multiple of 8 for 16-bit
// elements and of 4 for float, and every fragment pointer 32-byte aligned.
static_assert(kGemmTileLd % 8 == 0, "WMMA ldm of bf16 tiles must be a multiple of 8 elements");
static_assert(kGemmOutLd % 4 == 0, "WMMA ldm of the float tile must be a multiple of 4 elements");
static_assert(kGemmTileLd * 2 % 16 == 0, "shared rows must hold whole 16-byte vectors");
static_assert(kWmmaEdge * kGemmTileLd * 2 % 32 == 0, "a fragment 16 rows down a bf16 tile stays 32-byte aligned");
static_assert(kWmmaEdge * 2 % 32 == 0, "a fragment 16 columns along a bf16 tile stays 32-byte aligned");
static_assert(kWmmaEdge * kGemmOutLd * 4 % 32 == 0, "a fragment 16 rows down the float tile stays 32-byte aligned");
static_assert(kWmmaEdge * 4 % 32 == 0, "a fragment 16 columns along the float tile stays 32-byte aligned");
static_assert((kGemmM + kGemmN) * kGemmTileLd * 2 + kGemmM * kGemmOutLd * 4 <= 48 * 1024,
              "the tiles fit in static shared memory");

struct TileCell {
    int row;
    int col;
};

// Thread `tid`'s i-th vector of a k slice (i < kGemmAVectors for a, <
// kGemmWVectors for w): its row in the tile and first column in the slice.
TF_HOST_DEVICE constexpr TileCell gemm_vector_cell(int tid, int i) {
    const int v = tid + i * kGemmThreads;
    return {v / kGemmVectorsPerRow, (v % kGemmVectorsPerRow) * 8};
}

// Whether a vector starting at (row, k) of a [rows, k_total] operand is
// read; the rest are zeros. k_total is a multiple of 8, so a vector is
// wholly in or wholly out.
TF_HOST_DEVICE constexpr bool gemm_vector_read(int row, int k, int rows, int k_total) {
    return row < rows && k < k_total;
}

// The tile's first row of warp `warp`'s fragments, and fragment f's first column.
TF_HOST_DEVICE constexpr int gemm_warp_row(int warp) { return warp * kWmmaEdge; }
TF_HOST_DEVICE constexpr int gemm_fragment_col(int f) { return f * kWmmaEdge; }

// The epilogue's i-th element of the tile (threads take i = tid, tid + kGemmThreads, ...).
TF_HOST_DEVICE constexpr TileCell gemm_output_cell(int i) { return {i / kGemmN, i % kGemmN}; }

// Thread blocks of a launch: x over column tiles, y over row tiles.
TF_HOST_DEVICE constexpr int gemm_column_tiles(int n_cols) { return (n_cols + kGemmN - 1) / kGemmN; }
TF_HOST_DEVICE constexpr int gemm_row_tiles(int m_rows) { return (m_rows + kGemmM - 1) / kGemmM; }

}  // namespace tf::gpu::kernels
