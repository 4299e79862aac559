// The kernels against their references: the three SIMD paths (scalar,
// AVX2, AVX-512) give bit-identical results by construction, and each is
// close to a double-precision reference. Row tiling and column splits never
// change a bit.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <random>

#include "cpu/kernels/matmul.h"
#include "cpu/kernels/rmsnorm.h"
#include "cpu/kernels/rope.h"
#include "model/checkpoint_writer.h"
#include "model/rope.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/test_support.h"

namespace tf::cpu::kernels {
namespace {

using testing::random_floats;
using TestMatrix = testing::TestWeights;

// The f32 matmul tables (split_rows below packs for them).
std::vector<Isa> available_isas() { return testing::runnable_isas(Activations::f32); }

std::vector<float> split_rows(const std::vector<float>& x, int32_t M, int32_t K) {
    std::vector<float> xs(static_cast<size_t>(M) * padded_k(K));
    for (int32_t m = 0; m < M; ++m) split_pairs(&x[m * K], K, &xs[m * padded_k(K)]);
    return xs;
}

std::vector<float> run_matmul(Isa isa, const std::vector<float>& xs, int32_t M, const WeightMatrix& w, int threads = 1) {
    ThreadPool pool(threads);
    std::vector<float> out(static_cast<size_t>(M) * w.rows);
    MatmulJob job{&w, out.data(), w.rows};
    matmul(kernel_table(isa), pool, xs.data(), M, {job});
    return out;
}

TEST(SplitPairs, PutsEvenColumnsThenOddColumnsPerBlockOf32AndZeroPads) {
    std::vector<float> x(40);
    for (int i = 0; i < 40; ++i) x[i] = static_cast<float>(i + 1);
    std::vector<float> xs(64, -1.0f);
    split_pairs(x.data(), 40, xs.data());
    EXPECT_EQ(xs[0], 1.0f);    // x[0]
    EXPECT_EQ(xs[1], 3.0f);    // x[2]
    EXPECT_EQ(xs[16], 2.0f);   // x[1]
    EXPECT_EQ(xs[31], 32.0f);  // x[31]
    EXPECT_EQ(xs[32], 33.0f);  // x[32]
    EXPECT_EQ(xs[48], 34.0f);  // x[33]
    EXPECT_EQ(xs[36], 0.0f);   // x[40] is padding
}

class MatmulFormats : public ::testing::TestWithParam<WeightFormat> {};

TEST_P(MatmulFormats, EverySimdPathIsBitIdenticalToScalar) {
    for (int32_t K : {64, 80, 384}) {
        TestMatrix m(37, K, GetParam(), 1);
        for (int32_t M : {1, 3, 4, 9}) {
            auto xs = split_rows(random_floats(static_cast<size_t>(M) * K, 2), M, K);
            const auto reference = run_matmul(Isa::scalar, xs, M, m.w);
            for (Isa isa : available_isas()) {
                EXPECT_TRUE(testing::bitwise_equal(run_matmul(isa, xs, M, m.w), reference))
                    << isa_name(isa) << " K=" << K << " M=" << M;
            }
        }
    }
}

TEST_P(MatmulFormats, ARowGetsTheSameBitsAloneOrAmongOthersAndWithAnyThreadCount) {
    const int32_t K = 160, M = 11;
    TestMatrix m(53, K, GetParam(), 3);
    auto x = random_floats(static_cast<size_t>(M) * K, 4);
    auto xs = split_rows(x, M, K);
    for (Isa isa : available_isas()) {
        const auto batched = run_matmul(isa, xs, M, m.w, 1);
        EXPECT_TRUE(testing::bitwise_equal(run_matmul(isa, xs, M, m.w, 3), batched)) << isa_name(isa);
        for (int32_t row = 0; row < M; ++row) {
            std::vector<float> one(xs.begin() + row * padded_k(K), xs.begin() + (row + 1) * padded_k(K));
            const auto alone = run_matmul(isa, one, 1, m.w);
            EXPECT_TRUE(testing::bitwise_equal(alone, std::vector<float>(batched.begin() + row * 53, batched.begin() + (row + 1) * 53)))
                << isa_name(isa) << " row " << row;
        }
    }
}

TEST_P(MatmulFormats, IsCloseToTheDoubleReference) {
    const int32_t K = 200, M = 5;
    TestMatrix m(29, K, GetParam(), 5);
    auto x = random_floats(static_cast<size_t>(M) * K, 6);
    const auto ours = run_matmul(testing::fastest_isa(Activations::f32), split_rows(x, M, K), M, m.w);
    const auto reference = matmul_reference(x.data(), M, m.w);
    for (size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(ours[i], reference[i], 1e-5 * (1 + std::fabs(reference[i])));
}

INSTANTIATE_TEST_SUITE_P(Formats, MatmulFormats, ::testing::Values(WeightFormat::bf16, WeightFormat::f32_split));

TEST(RmsNorm, IsCloseToTheDoubleReference) {
    auto x = random_floats(384, 1, 3.0f);
    auto w = random_floats(384, 2);
    std::vector<float> out(384);
    std::vector<double> exact(384);
    rmsnorm_row(x.data(), w.data(), 384, 1e-6f, out.data());
    rmsnorm_reference(x.data(), w.data(), 384, 1e-6f, exact.data());
    for (int i = 0; i < 384; ++i) EXPECT_NEAR(out[i], exact[i], 1e-5 * (1 + std::fabs(exact[i])));
}

TEST(Rope, RotatesPairsHalfADimensionApartByPositionTimesFrequency) {
    model::ModelConfig c;
    c.head_dim = 8;
    c.rope_theta = 10000.0;
    auto inv_freq = model::rope_inv_freq(c);
    ASSERT_EQ(inv_freq.size(), 4u);
    EXPECT_FLOAT_EQ(inv_freq[0], 1.0f);
    EXPECT_NEAR(inv_freq[1], 0.1f, 1e-7);  // 10000^(-2/8)
    std::vector<float> cos_v(4), sin_v(4);
    rope_angles(inv_freq.data(), 4, 3, cos_v.data(), sin_v.data());
    std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
    rope(x.data(), 1, 8, cos_v.data(), sin_v.data());
    for (int i = 0; i < 4; ++i) {
        const double angle = 3.0 * inv_freq[i], a = i + 1, b = i + 5;
        EXPECT_NEAR(x[i], a * std::cos(angle) - b * std::sin(angle), 1e-5);
        EXPECT_NEAR(x[i + 4], b * std::cos(angle) + a * std::sin(angle), 1e-5);
    }
}

TEST(Rope, Llama3ScalingDividesLowFrequenciesAndKeepsHighOnes) {
    model::ModelConfig c;
    c.head_dim = 128;
    c.rope_theta = 500000.0;
    auto plain = model::rope_inv_freq(c);
    c.rope_scaling.enabled = true;  // factor 8, low 1, high 4, original 8192
    auto scaled = model::rope_inv_freq(c);
    EXPECT_EQ(scaled[0], plain[0]);                       // wavelength 2 pi: high frequency, kept
    EXPECT_FLOAT_EQ(scaled[63], plain[63] / 8.0f);        // longest wavelength: divided by the factor
    bool smoothed = false;
    for (int i = 0; i < 64; ++i) smoothed = smoothed || (scaled[i] < plain[i] && scaled[i] > plain[i] / 8.0f);
    EXPECT_TRUE(smoothed);                                 // the medium band is interpolated
}

TEST(ThreadPoolTest, ParallelForCoversEveryIndexOnceForAnyThreadCount) {
    for (int threads : {1, 2, 4}) {
        ThreadPool pool(threads);
        for (int64_t count : {1, 2, 7, 64, 1000}) {
            for (int round = 0; round < 50; ++round) {
                std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
                pool.parallel_for(count, [&](int64_t begin, int64_t end) {
                    for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
                });
                for (auto& h : hits) ASSERT_EQ(h.load(), 1) << threads << " threads, count " << count;
            }
        }
    }
}

TEST(ThreadPoolTest, BackToBackJobsOfChangingSizeNeverShareAChunk) {
    // A worker late from one job must not claim a chunk of the next (a
    // regression: the next job's larger chunk count once let it through).
    ThreadPool pool(2);
    std::vector<std::atomic<int>> hits(64);
    for (int round = 0; round < 20000; ++round) {
        const int64_t count = round % 2 ? 64 : 3;
        for (int64_t i = 0; i < count; ++i) hits[i].store(0);
        pool.parallel_for(count, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
        });
        for (int64_t i = 0; i < count; ++i) ASSERT_EQ(hits[i].load(), 1) << "round " << round;
    }
}

}  // namespace
}  // namespace tf::cpu::kernels
