// The bf16-activation matmul: the rounding of activations, the emulated
// VDPBF16PS step against the instruction (wherever it runs), every path
// bit-identical for a given precision, rows independent of their batch, and
// both precisions close to a double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "cpu/kernels/matmul.h"
#include "model/checkpoint_writer.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/test_support.h"

namespace tf::cpu::kernels {
namespace {

float bf16_value(uint16_t h) { return testing::float_from_bits(static_cast<uint32_t>(h) << 16); }

using testing::random_floats;
using Matrix = testing::TestWeights;

std::vector<Isa> paths_for(Activations activations) { return testing::runnable_isas(activations); }

std::vector<float> run(const KernelTable& table, const std::vector<float>& x, int32_t M, const WeightMatrix& w,
                       int threads = 1) {
    std::vector<char> packed(table.row_bytes(w.cols) * M);
    table.pack_rows(x.data(), M, w.cols, w.cols, packed.data());
    ThreadPool pool(threads);
    std::vector<float> out(static_cast<size_t>(M) * w.rows);
    matmul(table, pool, packed.data(), M, {MatmulJob{&w, out.data(), w.rows}});
    return out;
}

TEST(ActivationToBf16, RoundsToNearestEvenAndFlushesSubnormals) {
    EXPECT_EQ(activation_to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(activation_to_bf16(testing::float_from_bits(0x3F808000u)), 0x3F80);  // tie, even stays
    EXPECT_EQ(activation_to_bf16(testing::float_from_bits(0x3F818000u)), 0x3F82);  // tie, odd rounds up
    EXPECT_EQ(activation_to_bf16(testing::float_from_bits(0x3F808001u)), 0x3F81);  // above the tie
    EXPECT_EQ(activation_to_bf16(-2.5f), 0xC020);
    EXPECT_EQ(activation_to_bf16(testing::float_from_bits(0x00400000u)), 0x0000);  // subnormal
    EXPECT_EQ(activation_to_bf16(testing::float_from_bits(0x80000001u)), 0x8000);  // negative subnormal keeps its sign
    EXPECT_EQ(activation_to_bf16(testing::float_from_bits(0x7F7FFFFFu)), 0x7F80);  // rounds up into infinity
    EXPECT_EQ(activation_to_bf16(INFINITY), 0x7F80);
    EXPECT_TRUE(std::isnan(bf16_value(activation_to_bf16(NAN))));
    EXPECT_TRUE(std::isnan(bf16_value(activation_to_bf16(testing::float_from_bits(0x7F800001u)))));  // signalling stays NaN
}

TEST(ActivationPaths, AreParsedAndRefusedByName) {
    EXPECT_EQ(parse_activations("auto", Isa::avx512), Activations::f32);
    EXPECT_EQ(parse_activations("bf16", Isa::scalar), Activations::bf16);
    EXPECT_EQ(parse_activations("auto", Isa::avx512_bf16), Activations::bf16);
    EXPECT_THROW(parse_activations("f32", Isa::avx512_bf16), std::invalid_argument);
    EXPECT_THROW(parse_activations("fp8", Isa::scalar), std::invalid_argument);
    EXPECT_THROW(kernel_table(Isa::avx512_bf16, Activations::f32), std::invalid_argument);
    EXPECT_THROW(parse_isa("amx512"), std::invalid_argument);
    EXPECT_EQ(kernel_table(Isa::scalar, Activations::bf16).activations, Activations::bf16);
    EXPECT_EQ(kernel_table(Isa::avx2).activations, Activations::f32);
}

// The emulated step against a plain statement of the instruction's rule, on
// values chosen to hit its corners: subnormal inputs, sums that cancel into
// the subnormal range, and signed zeros.
TEST(DotPairs, EveryPathFollowsTheInstructionsRoundingAndFlushing) {
    auto rule = [](float acc, const uint16_t* x, const uint16_t* w) {
        auto in = [](uint16_t h) { return (h & 0x7F80) == 0 ? bf16_value(h & 0x8000) : bf16_value(h); };
        auto out = [](float v) { return std::fabs(v) < 0x1p-126f ? std::copysign(0.0f, v) : v; };
        acc = out(std::fma(in(x[1]), in(w[1]), acc));
        return out(std::fma(in(x[0]), in(w[0]), acc));
    };
    std::mt19937 rng(11);
    // Random sign and significand, exponents from 0 (subnormal) to 2^12:
    // no product overflows, so no NaN whose payload could differ.
    auto random_bf16 = [&rng] { return static_cast<uint16_t>((rng() & 0x807Fu) | ((rng() % 140u) << 7)); };
    const uint16_t corner[] = {0x0001, 0x8001, 0x007F, 0x0080, 0x8080, 0x0000, 0x8000, 0x3F80, 0xBF80, 0x0100, 0x2000};
    for (int round = 0; round < 200; ++round) {
        std::vector<uint16_t> x(32), w(32);
        for (int i = 0; i < 32; ++i) {
            x[i] = (rng() % 3 == 0) ? corner[rng() % 11] : random_bf16();
            w[i] = (rng() % 3 == 0) ? corner[rng() % 11] : random_bf16();
            if (round % 2 == 0) w[i] = x[i] ^ (i % 2 ? 0x8000 : 0);  // products that cancel exactly
        }
        // One 32-column row against one 32-input column: the matmul's lane l
        // holds exactly the pair step of elements 2l, 2l+1.
        Matrix m(1, 32, WeightFormat::bf16, std::vector<float>(32, 0.0f));
        m.bf16.assign(w.begin(), w.end());
        std::vector<float> x_values(32);
        for (int i = 0; i < 32; ++i) x_values[i] = bf16_value(x[i]);
        // pack_rows flushes subnormal activations itself; the rule sees the
        // same input.
        for (int i = 0; i < 32; ++i) x[i] = activation_to_bf16(x_values[i]);
        float lanes[16];
        for (int l = 0; l < 16; ++l) lanes[l] = rule(0.0f, &x[2 * l], &w[2 * l]);
        float t[8];
        for (int i = 0; i < 8; ++i) t[i] = lanes[i] + lanes[i + 8];
        for (int i = 0; i < 4; ++i) t[i] = t[i] + t[i + 4];
        for (int i = 0; i < 2; ++i) t[i] = t[i] + t[i + 2];
        const float expected = t[0] + t[1];
        for (Isa isa : paths_for(Activations::bf16)) {
            const auto got = run(kernel_table(isa, Activations::bf16), x_values, 1, m.w);
            EXPECT_TRUE(testing::bitwise_equal(got, {expected})) << isa_name(isa) << " round " << round;
        }
    }
}

class Precision : public ::testing::TestWithParam<std::tuple<Activations, WeightFormat>> {};

TEST_P(Precision, EveryPathIsBitIdenticalToScalar) {
    const auto [activations, format] = GetParam();
    // 1100 (1120 padded): the many-row kernel's K chunks, of 256 or 512,
    // end with a short one.
    for (int32_t K : {32, 80, 384, 1000, 1100}) {
        Matrix m(37, K, format, random_floats(static_cast<size_t>(37) * K, 1, 0.5f));
        for (int32_t M : {1, 3, 4, 5, 9, 16, 33}) {
            const auto x = random_floats(static_cast<size_t>(M) * K, 2);
            const auto reference = run(kernel_table(Isa::scalar, activations), x, M, m.w);
            for (Isa isa : paths_for(activations)) {
                EXPECT_TRUE(testing::bitwise_equal(run(kernel_table(isa, activations), x, M, m.w), reference))
                    << isa_name(isa) << " K=" << K << " M=" << M;
            }
        }
    }
}

TEST_P(Precision, ARowGetsTheSameBitsAloneOrAmongOthersWithAnyThreadCount) {
    const auto [activations, format] = GetParam();
    const int32_t N = 53;
    // Batches whose last row tile has each size the many-row kernels
    // (4 or 6 rows a tile) can leave; K of one chunk and of several, the
    // last one short.
    for (const auto& [K, M] : {std::pair{160, 6}, {160, 8}, {160, 9}, {160, 10}, {160, 19}, {160, 29}, {1100, 13}}) {
        Matrix m(N, K, format, random_floats(static_cast<size_t>(N) * K, 3, 0.5f));
        const auto x = random_floats(static_cast<size_t>(M) * K, 4);
        for (Isa isa : paths_for(activations)) {
            const KernelTable& table = kernel_table(isa, activations);
            const auto batched = run(table, x, M, m.w, 1);
            EXPECT_TRUE(testing::bitwise_equal(run(table, x, M, m.w, 3), batched)) << isa_name(isa) << " M=" << M;
            for (int32_t row = 0; row < M; ++row) {
                const std::vector<float> one(x.begin() + row * K, x.begin() + (row + 1) * K);
                EXPECT_TRUE(testing::bitwise_equal(
                    run(table, one, 1, m.w), std::vector<float>(batched.begin() + row * N, batched.begin() + (row + 1) * N)))
                    << isa_name(isa) << " M=" << M << " row " << row;
            }
        }
    }
}

// Against sums in double of the very inputs the kernel multiplies (for bf16
// activations, the rounded ones): only fp32 accumulation error remains.
TEST_P(Precision, IsCloseToTheDoubleReferenceOfItsInputs) {
    const auto [activations, format] = GetParam();
    const int32_t K = 1000, M = 6, N = 29;
    Matrix m(N, K, format, random_floats(static_cast<size_t>(N) * K, 5, 0.5f));
    auto x = random_floats(static_cast<size_t>(M) * K, 6);
    const auto ours = run(kernel_table(testing::fastest_isa(activations), activations), x, M, m.w);
    if (activations == Activations::bf16)
        for (float& v : x) v = bf16_value(activation_to_bf16(v));
    const auto reference = matmul_reference(x.data(), M, m.w);
    for (size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(ours[i], reference[i], 2e-5 * (1 + std::fabs(reference[i])));
}

INSTANTIATE_TEST_SUITE_P(
    Matmul, Precision,
    ::testing::Combine(::testing::Values(Activations::f32, Activations::bf16),
                       ::testing::Values(WeightFormat::bf16, WeightFormat::bf16_tiled, WeightFormat::f32_split)),
    [](const auto& info) {
        const WeightFormat format = std::get<1>(info.param);
        return std::string(activations_name(std::get<0>(info.param))) +
               (format == WeightFormat::bf16         ? "_bf16_weights"
                : format == WeightFormat::bf16_tiled ? "_bf16_tiled_weights"
                                                     : "_f32_weights");
    });

// The tiled layout moves weights, not arithmetic: every path gives the very
// bits of the row-major layout, for partial last tiles and any column range.
TEST(TiledWeights, GiveTheBitsOfTheRowMajorLayoutOnEveryPath) {
    for (auto [N, K] : {std::pair{37, 160}, std::pair{8, 32}, std::pair{61, 1000}}) {
        const auto values = random_floats(static_cast<size_t>(N) * K, 11, 0.5f);
        Matrix natural(N, K, WeightFormat::bf16, values), tiled(N, K, WeightFormat::bf16_tiled, values);
        for (int32_t n = 0; n < N; ++n)
            for (int32_t k = 0; k < K; k += 7) ASSERT_EQ(weight_at(tiled.w, n, k), weight_at(natural.w, n, k));
        for (Activations activations : {Activations::f32, Activations::bf16}) {
            for (int32_t M : {1, 2, 5, 16}) {
                const auto x = random_floats(static_cast<size_t>(M) * K, 12);
                for (Isa isa : paths_for(activations)) {
                    const KernelTable& table = kernel_table(isa, activations);
                    EXPECT_TRUE(testing::bitwise_equal(run(table, x, M, tiled.w, 2), run(table, x, M, natural.w, 1)))
                        << isa_name(isa) << " " << activations_name(activations) << " N=" << N << " K=" << K << " M=" << M;
                }
            }
        }
    }
}

}  // namespace
}  // namespace tf::cpu::kernels
