// Single kernels and one eager pass on a device (ctest label gpu; built
// only with CUDA, skips without a device):
//  - GpuEager: every kernel of a forward launched one by one, without
//    graphs, on tinycode and on the head_dim-128 model. tools/gpu-check runs
//    these first with CUDA_LAUNCH_BLOCKING=1, so a fault is reported by the
//    launch check that names its kernel;
//  - the GEMM against an exact host matmul (small integers, so every sum is
//    exact in fp32) with row and column tails, bias and accumulation, and
//    a row's result bitwise the same alone, at another place in its tile and
//    in batches of 17 and 130 rows.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "gpu/check.h"
#include "gpu/device_memory.h"
#include "gpu/kernels/launch.h"
#include "model/sampling.h"
#include "tests/gpu/gpu_test_support.h"

namespace tf::gpu {
namespace {

using model::Row;
using model::RowOutputs;
using model::SamplingParams;
using model::testing::random_tokens;

using GpuEager = testing::GpuTest;
using GpuKernels = testing::GpuTest;

// A prompt over two attention splits, a prefix copy of a partial block, then
// a round of decode and sampled rows of two streams, with every kernel
// launched on its own. The round must equal the same rows run one stream at a time.
void run_every_kernel(const std::string& dir) {
    auto backend = testing::GpuTest::load(dir, /*graphs=*/false);
    const int32_t vocab = backend->config().vocab_size;
    const auto prompt = random_tokens(600, vocab, 17);
    backend->open_stream(1, 700);
    backend->open_stream(2, 700);
    std::vector<Row> rows;
    for (int32_t p = 0; p < 600; ++p) rows.push_back({1, p, prompt[static_cast<size_t>(p)], p == 599});
    std::vector<float> logits;
    backend->forward(rows, logits);
    ASSERT_EQ(logits.size(), static_cast<size_t>(vocab));
    for (float v : logits) ASSERT_TRUE(std::isfinite(v));
    backend->copy_prefix(1, 2, 301);

    const std::vector<SamplingParams> samplers = {{.temperature = 0.0f}, {0.8f, 40, 0.9f, 0.05f, 7}};
    const std::vector<Row> round = {{1, 600, 5, true, 0}, {2, 301, prompt[301], true, 1}, {2, 302, 9, true, 0}};
    RowOutputs together;
    backend->forward(round, samplers, together);
    ASSERT_EQ(together.tokens.size(), 3u);
    for (int32_t t : together.tokens) ASSERT_TRUE(t >= 0 && t < vocab);
    EXPECT_EQ(together.tokens[0],
              model::argmax(std::span<const float>(together.logits.data(), static_cast<size_t>(vocab))));

    backend->truncate(1, 600);
    backend->truncate(2, 301);
    RowOutputs first, second;
    backend->forward(std::span<const Row>(round.data(), 1), samplers, first);
    backend->forward(std::span<const Row>(round.data() + 1, 2), samplers, second);
    first.logits.insert(first.logits.end(), second.logits.begin(), second.logits.end());
    first.tokens.insert(first.tokens.end(), second.tokens.begin(), second.tokens.end());
    EXPECT_TRUE(model::testing::bitwise_equal(first.logits, together.logits));
    EXPECT_EQ(first.tokens, together.tokens);
}

TEST_F(GpuEager, EveryKernelRunsLaunchByLaunchOnTinycode) { run_every_kernel(model::testing::tinycode_dir()); }

TEST_F(GpuEager, EveryKernelRunsLaunchByLaunchAtHeadDim128) {
    model::testing::TempDir temp;
    const std::string dir = temp.str() + "/head-dim-128";
    model::write_checkpoint(testing::head_dim_128_spec(), dir);
    run_every_kernel(dir);
}

uint16_t bf16_of(float value) { return float_to_bf16(value); }

struct DeviceGemm {
    DeviceMemory a, w, bias, y;
    int m, n, k;

    DeviceGemm(const std::vector<uint16_t>& a_host, const std::vector<uint16_t>& w_host,
               const std::vector<float>& bias_host, int m_rows, int n_cols, int k_depth)
        : a(a_host.size() * 2),
          w(w_host.size() * 2),
          bias(bias_host.size() * 4),
          y(static_cast<size_t>(m_rows) * n_cols * 4),
          m(m_rows),
          n(n_cols),
          k(k_depth) {
        TF_CUDA_CHECK(cudaMemcpy(a.get(), a_host.data(), a_host.size() * 2, cudaMemcpyHostToDevice));
        TF_CUDA_CHECK(cudaMemcpy(w.get(), w_host.data(), w_host.size() * 2, cudaMemcpyHostToDevice));
        if (!bias_host.empty())
            TF_CUDA_CHECK(cudaMemcpy(bias.get(), bias_host.data(), bias_host.size() * 4, cudaMemcpyHostToDevice));
    }

    // Rows [first, first + rows) of a, into y's rows from 0; y first holds `initial`.
    std::vector<float> run(int first, int rows, bool accumulate, const std::vector<float>& initial) {
        TF_CUDA_CHECK(cudaMemcpy(y.get(), initial.data(), initial.size() * 4, cudaMemcpyHostToDevice));
        kernels::Gemm g;
        g.a = a.get<uint16_t>() + static_cast<size_t>(first) * k;
        g.lda = k;
        g.w = w.get<uint16_t>();
        g.ldw = k;
        g.bias = bias.bytes() ? bias.get<float>() : nullptr;
        g.y = y.get<float>();
        g.ldy = n;
        g.m_rows = rows;
        g.n_cols = n;
        g.k = k;
        g.accumulate = accumulate;
        kernels::gemm(g, nullptr);
        TF_CUDA_CHECK(cudaDeviceSynchronize());
        std::vector<float> out(initial.size());
        TF_CUDA_CHECK(cudaMemcpy(out.data(), y.get(), out.size() * 4, cudaMemcpyDeviceToHost));
        return out;
    }
};

TEST_F(GpuKernels, GemmEqualsAnExactHostMatmulWithRowAndColumnTails) {
    struct Shape {
        int m, n, k;
        bool bias, accumulate;
    };
    std::mt19937 rng(3);
    auto small = [&] { return static_cast<int>(rng() % 7) - 3; };
    for (const Shape s :
         {Shape{1, 1000, 344, false, false}, Shape{15, 40, 96, true, false}, Shape{17, 70, 8, false, true},
          Shape{65, 1000, 344, true, true}, Shape{130, 688, 256, true, false}}) {
        SCOPED_TRACE("M " + std::to_string(s.m) + " N " + std::to_string(s.n) + " K " + std::to_string(s.k));
        std::vector<int> a_int(static_cast<size_t>(s.m) * s.k), w_int(static_cast<size_t>(s.n) * s.k);
        std::vector<uint16_t> a(a_int.size()), w(w_int.size());
        for (size_t i = 0; i < a.size(); ++i) a[i] = bf16_of(static_cast<float>(a_int[i] = small()));
        for (size_t i = 0; i < w.size(); ++i) w[i] = bf16_of(static_cast<float>(w_int[i] = small()));
        std::vector<float> bias;
        if (s.bias) {
            for (int i = 0; i < s.n; ++i) bias.push_back(static_cast<float>(small()));
        }
        std::vector<float> initial(static_cast<size_t>(s.m) * s.n);
        for (size_t i = 0; i < initial.size(); ++i) initial[i] = static_cast<float>(i % 5);
        DeviceGemm gemm(a, w, bias, s.m, s.n, s.k);
        const std::vector<float> y = gemm.run(0, s.m, s.accumulate, initial);
        for (int m = 0; m < s.m; ++m) {
            for (int n = 0; n < s.n; ++n) {
                int64_t sum = 0;
                for (int k = 0; k < s.k; ++k)
                    sum += int64_t{a_int[static_cast<size_t>(m) * s.k + k]} * w_int[static_cast<size_t>(n) * s.k + k];
                const size_t at = static_cast<size_t>(m) * s.n + n;
                float expected = static_cast<float>(sum) + (s.bias ? bias[static_cast<size_t>(n)] : 0.0f);
                if (s.accumulate) expected += initial[at];
                ASSERT_EQ(y[at], expected) << "row " << m << " column " << n;
            }
        }
    }
}

TEST_F(GpuKernels, GemmRowsAreBitwiseTheSameAloneAndInAnyBatch) {
    constexpr int kRows = 130, kN = 1000, kK = 344;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<uint16_t> a(static_cast<size_t>(kRows) * kK), w(static_cast<size_t>(kN) * kK);
    for (uint16_t& v : a) v = bf16_of(normal(rng));
    for (uint16_t& v : w) v = bf16_of(normal(rng) * 0.05f);
    DeviceGemm gemm(a, w, {}, kRows, kN, kK);
    const std::vector<float> zeros(static_cast<size_t>(kRows) * kN, 0.0f);
    const std::vector<float> batch = gemm.run(0, kRows, false, zeros);
    const std::vector<float> batch17 = gemm.run(0, 17, false, zeros);
    for (int r : {0, 1, 16, 63, 64, 100, 129}) {
        const std::vector<float> alone = gemm.run(r, 1, false, zeros);  // the row at place 0 of a one-row tile
        EXPECT_EQ(std::memcmp(alone.data(), batch.data() + static_cast<size_t>(r) * kN, kN * 4), 0)
            << "row " << r << " alone";
        if (r < 17) {
            EXPECT_EQ(std::memcmp(batch17.data() + static_cast<size_t>(r) * kN,
                                  batch.data() + static_cast<size_t>(r) * kN, kN * 4),
                      0)
                << "row " << r << " in a batch of 17";
        }
    }
}

}  // namespace
}  // namespace tf::gpu
