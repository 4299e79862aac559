// make-checkpoint --embed: tinycode's trained weights inside a larger Qwen3
// shape (model/checkpoint_embed.h) must compute tinycode's function. The
// CPU backend runs both on the same tokens; each position's distribution
// over tinycode's vocabulary must match, and the extra tokens must never
// come near winning.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "cpu/cpu_backend.h"
#include "model/checkpoint_embed.h"
#include "model/checkpoint_writer.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/test_support.h"

namespace tf::cpu {
namespace {

using testing::logits_in_chunks;
using testing::random_tokens;
using testing::TempDir;

// A shape that changes everything the mapping handles: wider hidden and
// MLP, more layers, twice the head_dim (RoPE dims moved), q heads grouped by
// 2 where tinycode groups them by 3 (kv heads copied), a larger vocabulary
// (the constant channel).
model::CheckpointSpec larger_shape() {
    model::CheckpointSpec spec = model::preset_spec("tiny-qwen3");
    spec.hidden_size = 512;
    spec.num_layers = 10;
    spec.num_heads = 8;
    spec.num_kv_heads = 4;
    spec.head_dim = 128;
    spec.intermediate_size = 1536;
    spec.vocab_size = 8448;
    spec.tie_word_embeddings = true;
    spec.dtype = model::DType::f32;  // the norms' scaled weights stay exact
    return spec;
}

std::vector<double> log_softmax(const float* logits, int32_t n) {
    const double top = *std::max_element(logits, logits + n);
    double sum = 0;
    for (int32_t i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - top);
    std::vector<double> out(n);
    for (int32_t i = 0; i < n; ++i) out[i] = double(logits[i]) - top - std::log(sum);
    return out;
}

TEST(EmbeddedCheckpoint, ComputesTheSmallModelsDistributionInsideALargerShape) {
    const std::string small_dir = testing::tinycode_dir();
    const model::ModelConfig small = model::load_model_config(small_dir);
    const model::CheckpointSpec spec = model::spec_for_embedding(small, larger_shape());
    TempDir dir;
    const model::EmbeddedWeights weights(small_dir, spec);
    model::write_checkpoint(spec, dir.str(), small_dir, &weights);

    const auto isa = testing::fastest_isa(kernels::Activations::f32);
    auto tiny = load_cpu_backend(small_dir, 2, isa, kernels::Activations::f32);
    auto large = load_cpu_backend(dir.str(), 2, isa, kernels::Activations::f32);
    ASSERT_EQ(large->config().vocab_size, 8448);
    ASSERT_EQ(large->config().eos_token_ids, small.eos_token_ids);
    const std::vector<int32_t> tokens = random_tokens(48, small.vocab_size, 5);
    const std::vector<float> want = logits_in_chunks(*tiny, 0, tokens, {48});
    const std::vector<float> got = logits_in_chunks(*large, 0, tokens, {48});

    const int32_t vs = small.vocab_size, vb = spec.vocab_size;
    double worst = 0;
    int32_t same_argmax = 0;
    for (size_t t = 0; t < tokens.size(); ++t) {
        const float* w = want.data() + t * vs;
        const float* g = got.data() + t * vb;
        const std::vector<double> lw = log_softmax(w, vs), lg = log_softmax(g, vs);
        for (int32_t i = 0; i < vs; ++i) worst = std::max(worst, std::abs(lw[i] - lg[i]) * std::exp(lw[i]));
        same_argmax += std::max_element(w, w + vs) - w == std::max_element(g, g + vs) - g;
        // The tokens past tinycode's vocabulary sit far below its best one.
        const float best = *std::max_element(g, g + vs);
        EXPECT_LT(*std::max_element(g + vs, g + vb), best - 50.0f) << "position " << t;
    }
    // Probability-weighted log-prob error: tiny next to the logit noise of
    // a different summation order (the constant channel and RMSNorm's eps
    // over more dims move it by ~1e-5).
    EXPECT_LT(worst, 1e-3);
    EXPECT_GE(same_argmax, 47);
}

TEST(EmbeddedCheckpoint, RefusesShapesTheSmallModelDoesNotFit) {
    const std::string small_dir = testing::tinycode_dir();
    const model::ModelConfig small = model::load_model_config(small_dir);
    auto refused = [&](auto change) {
        model::CheckpointSpec spec = model::spec_for_embedding(small, larger_shape());
        change(spec);
        try {
            model::EmbeddedWeights weights(small_dir, spec);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(refused([](auto& s) { s.hidden_size = 384; }).find("hidden_size"), std::string::npos);
    EXPECT_NE(refused([](auto& s) { s.num_layers = 4; }).find("num_hidden_layers"), std::string::npos);
    EXPECT_NE(refused([](auto& s) { s.head_dim = 96; }).find("head_dim"), std::string::npos);
    EXPECT_NE(refused([](auto& s) { s.num_heads = s.num_kv_heads = 4; }).find("num_key_value_heads"), std::string::npos);
    EXPECT_NE(refused([](auto& s) { s.architecture = "LlamaForCausalLM"; }).find("Llama"), std::string::npos);
    EXPECT_NE(refused([](auto& s) { s.rope_theta = 10000.0; }).find("rope_theta"), std::string::npos);
    EXPECT_EQ(refused([](auto&) {}), "accepted");
}

}  // namespace
}  // namespace tf::cpu
