// Mixtures of experts on the CPU backend. The router alone: its tie rule,
// top-k, normalization and the sigmoid router's groups, on hand-made
// logits. The backend on make-checkpoint's tiny-qwen3-moe (two sparse
// layers around a dense one), bitwise: a row's logits are the same in one
// prefill, one token at a time, in verify-sized chunks, mixed with other
// streams' rows (which route elsewhere), at 1-3 threads and on every SIMD
// path, in fp32 and with quantized experts.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "cpu/cpu_backend.h"
#include "cpu/moe_router.h"
#include "model/checkpoint_writer.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/test_support.h"

namespace tf::cpu {
namespace {

using kernels::Isa;
using testing::bitwise_equal;
using testing::logits_in_chunks;
using testing::random_tokens;
using testing::TempDir;

model::MoeConfig softmax_router(int32_t experts, int32_t k, bool normalize) {
    model::MoeConfig moe;
    moe.num_experts = experts;
    moe.experts_per_token = k;
    moe.norm_topk_prob = normalize;
    return moe;
}

std::vector<ExpertChoice> route(const model::MoeConfig& moe, const std::vector<float>& logits,
                                const std::vector<float>& bias = {}) {
    std::vector<ExpertChoice> chosen(static_cast<size_t>(moe.experts_per_token));
    std::vector<float> scratch(2 * static_cast<size_t>(moe.num_experts));
    route_token(moe, logits.data(), bias.empty() ? nullptr : bias.data(), chosen, scratch.data());
    return chosen;
}

std::vector<int32_t> experts_of(const std::vector<ExpertChoice>& chosen) {
    std::vector<int32_t> out;
    for (const ExpertChoice& c : chosen) out.push_back(c.expert);
    return out;
}

TEST(MoeRouter, SoftmaxTopKComesOutInExpertOrderWithSoftmaxWeights) {
    const std::vector<float> logits{0.5f, 3.0f, -1.0f, 2.0f, 0.0f};
    const auto chosen = route(softmax_router(5, 2, false), logits);
    EXPECT_EQ(experts_of(chosen), (std::vector<int32_t>{1, 3}));
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - 3.0);
    EXPECT_NEAR(chosen[0].weight, 1.0 / sum, 1e-6);
    EXPECT_NEAR(chosen[1].weight, std::exp(-1.0) / sum, 1e-6);
    const auto normalized = route(softmax_router(5, 2, true), logits);
    EXPECT_NEAR(normalized[0].weight + normalized[1].weight, 1.0, 1e-6);
    EXPECT_NEAR(normalized[0].weight, 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
}

TEST(MoeRouter, ATieGoesToTheLowerExpert) {
    EXPECT_EQ(experts_of(route(softmax_router(6, 2, true), {1, 2, 2, 2, 0, 2})), (std::vector<int32_t>{1, 2}));
    EXPECT_EQ(experts_of(route(softmax_router(4, 1, true), {0, 0, 0, 0})), (std::vector<int32_t>{0}));
    EXPECT_EQ(experts_of(route(softmax_router(4, 3, true), {5, 0, 5, 5})), (std::vector<int32_t>{0, 2, 3}));
}

TEST(MoeRouter, SigmoidChoosesOnBiasedScoresInsideTheBestGroupsAndWeighsUnbiased) {
    model::MoeConfig moe = softmax_router(8, 2, true);
    moe.router = model::RouterKind::sigmoid;
    moe.groups = 4;  // {0,1} {2,3} {4,5} {6,7}
    moe.top_groups = 2;
    moe.routed_scaling_factor = 2.5f;
    // Unbiased, expert 6 leads; the bias lifts group {2,3} and {0,1} above
    // group {6,7}, so 6 is out although its own score is the highest.
    const std::vector<float> logits{1.0f, 0.5f, 0.0f, 0.2f, -2.0f, -2.0f, 4.0f, -3.0f};
    const std::vector<float> bias{0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    const auto chosen = route(moe, logits, bias);
    EXPECT_EQ(experts_of(chosen), (std::vector<int32_t>{2, 3}));
    auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
    const double total = sigmoid(0.0) + sigmoid(0.2);
    EXPECT_NEAR(chosen[0].weight, 2.5 * sigmoid(0.0) / total, 1e-6);
    EXPECT_NEAR(chosen[1].weight, 2.5 * sigmoid(0.2) / total, 1e-6);
    // Without the bias, groups {0,1} (0.73 + 0.62) and {2,3} (0.5 + 0.55)
    // still beat {6,7} (0.98 + 0.05): expert 6 stays out.
    EXPECT_EQ(experts_of(route(moe, logits)), (std::vector<int32_t>{0, 1}));
    // One group holding everything: plain top-k on the biased scores.
    moe.groups = moe.top_groups = 1;
    EXPECT_EQ(experts_of(route(moe, logits, {0, 0, 0, 0, 0, 0, 0, 0.9f})), (std::vector<int32_t>{6, 7}));
}

constexpr int32_t kTokens = 72;

class MoeBackend : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new TempDir();
        model::CheckpointSpec spec = model::preset_spec("tiny-qwen3-moe");
        spec.seed = 23;
        model::write_checkpoint(spec, dir_->str());
    }
    static void TearDownTestSuite() {
        delete dir_;
        dir_ = nullptr;
    }
    static std::unique_ptr<CpuBackend> backend(int threads, Isa isa = testing::fastest_isa(kernels::Activations::f32),
                                               const WeightOptions& weights = {}) {
        return load_cpu_backend(dir_->str(), threads, isa, kernels::Activations::f32, weights);
    }
    void SetUp() override {
        backend_ = backend(2);
        ASSERT_TRUE(backend_->config().moe.enabled());
        ASSERT_EQ(backend_->config().expert_layer_count(), 2);
        vocab_ = backend_->config().vocab_size;
        tokens_ = random_tokens(kTokens, vocab_, 42);
        prefill_ = logits_in_chunks(*backend_, 0, tokens_, {kTokens});
    }

    static TempDir* dir_;
    std::unique_ptr<CpuBackend> backend_;
    int32_t vocab_ = 0;
    std::vector<int32_t> tokens_;
    std::vector<float> prefill_;
};

TempDir* MoeBackend::dir_ = nullptr;

TEST_F(MoeBackend, APrefillTouchesEveryExpertAndOneRowOnlyItsOwn) {
    // Not a property of the code but of the fixture: without it the
    // invariance tests below would not exercise several experts at once.
    EXPECT_EQ(backend_->experts_touched(), backend_->config().moe.num_experts);
    logits_in_chunks(*backend_, 1, tokens_, {1});
    EXPECT_EQ(backend_->experts_touched(), backend_->config().moe.experts_per_token);
}

TEST_F(MoeBackend, OneTokenAtATimeAndVerifyChunksEqualOnePrefill) {
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend_, 1, tokens_, {1}), prefill_));
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend_, 2, tokens_, {2, 3, 5, 8, 13, 4, 7, 16, 14}), prefill_));
}

TEST_F(MoeBackend, RowsMixedWithOtherStreamsEqualOnePrefill) {
    const auto other = random_tokens(kTokens, vocab_, 7);
    backend_->open_stream(1, kTokens);
    backend_->open_stream(2, kTokens);
    std::vector<float> ours;
    for (int32_t p = 0, chunk = 0; p < kTokens; p += chunk) {
        chunk = std::min<int32_t>(kTokens - p, 1 + p % 11);
        std::vector<model::Row> rows;
        for (int32_t i = 0, j = 0; i < chunk; ++i) {
            // The other stream's rows before, between and after ours.
            if (i % 2 == 0) {
                rows.push_back({2, j, other[p + j], false});
                ++j;
            }
            rows.push_back({1, p + i, tokens_[p + i], true});
        }
        std::vector<float> logits;
        backend_->forward(rows, logits);
        ours.insert(ours.end(), logits.begin(), logits.end());
        backend_->truncate(2, 0);
    }
    EXPECT_TRUE(bitwise_equal(ours, prefill_));
}

TEST_F(MoeBackend, ThreadCountsAndSimdPathsGiveTheSameBits) {
    for (int threads : {1, 3}) {
        auto other = backend(threads);
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*other, 0, tokens_, {9, 50, 13}), prefill_)) << threads << " threads";
    }
    for (Isa isa : testing::runnable_isas(kernels::Activations::f32)) {
        auto other = backend(2, isa);
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*other, 0, tokens_, {kTokens}), prefill_)) << kernels::isa_name(isa);
    }
}

TEST_F(MoeBackend, QuantizedExpertsKeepTheRouterInFp32AndStayInvariant) {
    WeightOptions options;
    options.quantize = model::QuantType::q8_0;
    auto q = backend(2, testing::fastest_isa(kernels::Activations::f32), options);
    for (const LayerWeights& l : q->weights().layers()) {
        if (l.experts.empty()) continue;
        EXPECT_EQ(l.router.format, kernels::WeightFormat::f32_split);
        EXPECT_TRUE(kernels::is_quantized(l.experts[0].w_up.format));
    }
    const auto whole = logits_in_chunks(*q, 0, tokens_, {kTokens});
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*q, 1, tokens_, {1}), whole));
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*q, 2, tokens_, {16, 16, 16, 16, 8}), whole));
    // Close to the fp32 weights' logits: q8_0 moves them a little.
    double worst = 0, scale = 0;
    for (size_t i = 0; i < whole.size(); ++i) {
        worst = std::max(worst, std::abs(static_cast<double>(whole[i]) - prefill_[i]));
        scale = std::max(scale, std::abs(static_cast<double>(prefill_[i])));
    }
    EXPECT_LT(worst, 0.05 * scale);
}

TEST_F(MoeBackend, TheWeightSummaryCountsActiveExpertsApart) {
    const Weights& w = backend_->weights();
    const model::MoeConfig& moe = backend_->config().moe;
    EXPECT_LT(w.active_matmul_bytes(), w.matmul_bytes());
    // Two sparse layers, each holding num_experts experts of which k are read.
    size_t expert_bytes = 0;
    for (const WeightMatrix* m : {&w.layers()[0].experts[0].w_gate, &w.layers()[0].experts[0].w_up, &w.layers()[0].experts[0].w_down}) {
        ASSERT_EQ(m->format, kernels::WeightFormat::bf16_tiled);
        expert_bytes += static_cast<size_t>(kernels::tiled_rows(m->rows)) * m->stride * 2;
    }
    EXPECT_EQ(w.matmul_bytes() - w.active_matmul_bytes(), 2 * (moe.num_experts - moe.experts_per_token) * expert_bytes);
}

}  // namespace
}  // namespace tf::cpu
