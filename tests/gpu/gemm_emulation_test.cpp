// The GEMM kernel's tiling, run on the CPU: every index comes from
// gpu/kernels/gemm_tiling.h, the functions the kernel itself calls, and only
// the tensor-core step (WMMA m16n16k16) is replaced by a loop. With small
// integers as inputs every sum is exact in fp32, so the emulated kernel must
// equal a plain matmul bit for bit; a wrong row, column, k offset, tail
// guard or epilogue index would change a sum or touch a cell it must not.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/kernels/gemm_tiling.h"

namespace tf::gpu::kernels {
namespace {

uint16_t bf16_of_small_int(int value) {
    const auto f = static_cast<float>(value);
    uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    return static_cast<uint16_t>(bits >> 16);  // exact: small integers need 8 significant bits at most
}

float float_of_bf16(uint16_t bits) {
    const uint32_t wide = static_cast<uint32_t>(bits) << 16;
    float f = 0;
    std::memcpy(&f, &wide, 4);
    return f;
}

struct HostGemm {
    const uint16_t* a = nullptr;
    int lda = 0;
    const uint16_t* w = nullptr;
    int ldw = 0;
    const float* bias = nullptr;
    float* y = nullptr;
    int ldy = 0;
    int m_rows = 0, n_cols = 0, k = 0;
    bool accumulate = false;
};

// One thread block of gemm_kernel: loads, tensor-core steps, epilogue.
// Also checks that each k slice's vectors fill every cell of the shared
// tiles exactly once, and that the epilogue visits every tile cell once.
void emulate_block(const HostGemm& g, int block_x, int block_y) {
    const int m0 = block_y * kGemmM, n0 = block_x * kGemmN;
    std::vector<float> a_tile(kGemmM * kGemmTileLd), w_tile(kGemmN * kGemmTileLd), c_tile(kGemmM * kGemmOutLd);
    std::vector<float> acc(static_cast<size_t>(kGemmWarps) * kGemmFragmentsN * kWmmaEdge * kWmmaEdge, 0.0f);
    auto fill = [&](std::vector<float>& tile, int tile_rows, int vectors, const uint16_t* source, int ld, int origin,
                    int limit, int k0) {
        std::vector<int> written(static_cast<size_t>(tile_rows) * kGemmK, 0);
        for (int tid = 0; tid < kGemmThreads; ++tid) {
            for (int i = 0; i < vectors; ++i) {
                const TileCell cell = gemm_vector_cell(tid, i);
                ASSERT_LT(cell.row, tile_rows);
                ASSERT_LE(cell.col + 8, kGemmK);
                const int r = origin + cell.row, k = k0 + cell.col;
                const bool read = gemm_vector_read(r, k, limit, g.k);
                for (int e = 0; e < 8; ++e) {
                    tile[static_cast<size_t>(cell.row) * kGemmTileLd + cell.col + e] =
                        read ? float_of_bf16(source[static_cast<size_t>(r) * ld + k + e]) : 0.0f;
                    ++written[static_cast<size_t>(cell.row) * kGemmK + cell.col + e];
                }
            }
        }
        for (int count : written) ASSERT_EQ(count, 1);
    };
    for (int k0 = 0; k0 < g.k; k0 += kGemmK) {
        fill(a_tile, kGemmM, kGemmAVectors, g.a, g.lda, m0, g.m_rows, k0);
        fill(w_tile, kGemmN, kGemmWVectors, g.w, g.ldw, n0, g.n_cols, k0);
        for (int warp = 0; warp < kGemmWarps; ++warp) {
            for (int kk = 0; kk < kGemmK; kk += kWmmaEdge) {
                for (int f = 0; f < kGemmFragmentsN; ++f) {
                    float* c = &acc[(static_cast<size_t>(warp) * kGemmFragmentsN + f) * kWmmaEdge * kWmmaEdge];
                    // mma_sync: A row-major from a_tile, B = w_tile read column-major (wᵀ).
                    for (int r = 0; r < kWmmaEdge; ++r) {
                        for (int col = 0; col < kWmmaEdge; ++col) {
                            for (int q = 0; q < kWmmaEdge; ++q) {
                                c[r * kWmmaEdge + col] +=
                                    a_tile[static_cast<size_t>(gemm_warp_row(warp) + r) * kGemmTileLd + kk + q] *
                                    w_tile[static_cast<size_t>(gemm_fragment_col(f) + col) * kGemmTileLd + kk + q];
                            }
                        }
                    }
                }
            }
        }
    }
    for (int warp = 0; warp < kGemmWarps; ++warp) {
        for (int f = 0; f < kGemmFragmentsN; ++f) {
            const float* c = &acc[(static_cast<size_t>(warp) * kGemmFragmentsN + f) * kWmmaEdge * kWmmaEdge];
            for (int r = 0; r < kWmmaEdge; ++r) {
                for (int col = 0; col < kWmmaEdge; ++col) {
                    c_tile[static_cast<size_t>(gemm_warp_row(warp) + r) * kGemmOutLd + gemm_fragment_col(f) + col] =
                        c[r * kWmmaEdge + col];
                }
            }
        }
    }
    std::vector<int> visited(kGemmM * kGemmN, 0);
    for (int tid = 0; tid < kGemmThreads; ++tid) {
        for (int i = tid; i < kGemmM * kGemmN; i += kGemmThreads) {
            const TileCell cell = gemm_output_cell(i);
            ++visited[static_cast<size_t>(cell.row) * kGemmN + cell.col];
            const int m = m0 + cell.row, n = n0 + cell.col;
            if (m >= g.m_rows || n >= g.n_cols) continue;
            float value = c_tile[static_cast<size_t>(cell.row) * kGemmOutLd + cell.col];
            if (g.bias) value += g.bias[n];
            float* y = g.y + static_cast<size_t>(m) * g.ldy + n;
            *y = g.accumulate ? *y + value : value;
        }
    }
    for (int count : visited) ASSERT_EQ(count, 1);
}

void emulate_gemm(const HostGemm& g) {
    for (int by = 0; by < gemm_row_tiles(g.m_rows); ++by) {
        for (int bx = 0; bx < gemm_column_tiles(g.n_cols); ++bx) emulate_block(g, bx, by);
    }
}

struct Shape {
    int m, n, k;
    int lda_pad, ldy_pad;
    bool bias, accumulate;
};

TEST(GpuGemmTiling, EmulatedKernelEqualsAPlainMatmulForEveryTail) {
    std::vector<Shape> shapes;
    for (int m : {1, 15, 17, 65}) {
        for (int n : {8, 32, 40, 70}) {
            for (int k : {8, 96}) shapes.push_back({m, n, k, (m + n) % 3 == 0 ? 8 : 0, n % 3, m % 2 == 1, n == 40});
        }
    }
    std::mt19937 rng(11);
    auto small = [&] { return static_cast<int>(rng() % 7) - 3; };
    constexpr float kSentinel = 12345.0f;
    for (const Shape& s : shapes) {
        SCOPED_TRACE("M " + std::to_string(s.m) + " N " + std::to_string(s.n) + " K " + std::to_string(s.k));
        const int lda = s.k + s.lda_pad, ldw = s.k + (s.m % 3 == 0 ? 16 : 0), ldy = s.n + s.ldy_pad;
        std::vector<uint16_t> a(static_cast<size_t>(s.m) * lda), w(static_cast<size_t>(s.n) * ldw);
        std::vector<int> a_int(a.size()), w_int(w.size());
        for (size_t i = 0; i < a.size(); ++i) a[i] = bf16_of_small_int(a_int[i] = small());
        for (size_t i = 0; i < w.size(); ++i) w[i] = bf16_of_small_int(w_int[i] = small());
        std::vector<float> bias(static_cast<size_t>(s.n));
        for (float& b : bias) b = static_cast<float>(small());
        std::vector<float> y(static_cast<size_t>(s.m) * ldy, kSentinel);
        if (s.accumulate) {
            for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 5);
        }
        const std::vector<float> before = y;

        HostGemm g{.a = a.data(),
                   .lda = lda,
                   .w = w.data(),
                   .ldw = ldw,
                   .bias = s.bias ? bias.data() : nullptr,
                   .y = y.data(),
                   .ldy = ldy,
                   .m_rows = s.m,
                   .n_cols = s.n,
                   .k = s.k,
                   .accumulate = s.accumulate};
        emulate_gemm(g);
        if (HasFatalFailure()) return;

        for (int m = 0; m < s.m; ++m) {
            for (int col = 0; col < ldy; ++col) {
                const size_t at = static_cast<size_t>(m) * ldy + col;
                if (col >= s.n) {
                    ASSERT_EQ(y[at], before[at]) << "row " << m << ": column " << col << " past n_cols was written";
                    continue;
                }
                int64_t sum = 0;
                for (int k = 0; k < s.k; ++k) {
                    sum += int64_t{a_int[static_cast<size_t>(m) * lda + k]} * w_int[static_cast<size_t>(col) * ldw + k];
                }
                float expected = static_cast<float>(sum) + (s.bias ? bias[static_cast<size_t>(col)] : 0.0f);
                if (s.accumulate) expected += before[at];
                ASSERT_EQ(y[at], expected) << "row " << m << " column " << col;
            }
        }
    }
}

TEST(GpuGemmTiling, LaunchCoversEveryRowAndColumnTile) {
    EXPECT_EQ(gemm_row_tiles(1), 1);
    EXPECT_EQ(gemm_row_tiles(64), 1);
    EXPECT_EQ(gemm_row_tiles(65), 2);
    EXPECT_EQ(gemm_column_tiles(151936), 151936 / kGemmN);  // Qwen3's lm_head: whole tiles
    EXPECT_EQ(gemm_column_tiles(1000), 32);                 // 31 whole tiles and a tail of 8
    EXPECT_EQ(gemm_column_tiles(8), 1);
}

}  // namespace
}  // namespace tf::gpu::kernels
