// The CPU backend with weights quantized at load (--quantize), on the real
// tinycode weights: which matrices take which format, and batch invariance
// bitwise as for bf16 weights (one prefill, one token at a time, verify
// chunks, other streams in the batch, 1 to 3 threads, every SIMD path);
// and the logits stay near the bf16 model's.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/cpu_backend.h"
#include "cpu/kernels/quant_matmul.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/test_support.h"

namespace tf::cpu {
namespace {

using kernels::Activations;
using kernels::Isa;
using kernels::WeightFormat;
using model::QuantType;
using testing::bitwise_equal;
using testing::logits_in_chunks;
using testing::random_tokens;
using testing::tinycode_dir;

constexpr int32_t kTokens = 40;

std::unique_ptr<CpuBackend> quantized(model::QuantType type, int threads, Isa isa = kernels::best_isa()) {
    WeightOptions options;
    options.quantize = type;
    return load_cpu_backend(tinycode_dir(), threads, isa, kernels::default_activations(isa), options);
}

class QuantizedBackend : public ::testing::TestWithParam<model::QuantType> {};

TEST_P(QuantizedBackend, EveryMatmulWeightTakesTheFormatOrItsQ8Fallback) {
    const model::QuantType type = GetParam();
    auto backend = quantized(type, 1);
    const Weights& w = backend->weights();
    // tinycode: hidden 384 (not a multiple of 256), intermediate 1024.
    const bool k_quant = model::quant_block_elements(type) == 256;
    const WeightFormat wanted = kernels::weight_format(type);
    const WeightFormat narrow = k_quant ? WeightFormat::q8_0 : wanted;
    for (const LayerWeights& l : w.layers()) {
        for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.w_gate, &l.w_up}) EXPECT_EQ(m->format, narrow);
        EXPECT_EQ(l.wo.format, narrow);  // q_dim 384
        EXPECT_EQ(l.w_down.format, wanted);
    }
    EXPECT_EQ(w.lm_head().format, narrow);
    const std::string summary = w.summary();
    EXPECT_NE(summary.find(std::string(model::quant_type_name(type)) + " weights"), std::string::npos) << summary;
    EXPECT_NE(summary.find("quantized from bf16"), std::string::npos) << summary;
    EXPECT_EQ(summary.find("q8_0: rows not a multiple of 256") != std::string::npos, k_quant) << summary;
    // Fewer bytes than bf16 by about the format's bits per weight.
    auto bf16 = load_cpu_backend(tinycode_dir(), 1, kernels::best_isa());
    EXPECT_LT(w.matmul_bytes(),
              bf16->weights().matmul_bytes() * (type == model::QuantType::q8_0 || k_quant ? 0.6
                                                : type == model::QuantType::q5_0 ? 0.38
                                                                                 : 0.32));
}

// A long load says how far it is (the thresholds are set to zero here so
// that every matrix reports).
TEST_P(QuantizedBackend, ALongLoadReportsItsProgress) {
    std::vector<std::string> lines;
    WeightOptions options;
    options.quantize = GetParam();
    options.progress = [&](const std::string& line) { lines.push_back(line); };
    options.progress_after_seconds = options.progress_every_seconds = 0;
    auto weights = Weights::load(tinycode_dir(), options);
    ASSERT_EQ(lines.size(), 7u * 8 + 1) << "one line per matrix of tinycode's 8 layers and lm_head";
    EXPECT_NE(
        lines.front().find(std::string("quantizing to ") + model::quant_type_name(GetParam()) + ": matrix 1 of 57"),
        std::string::npos)
        << lines.front();
    EXPECT_NE(lines.back().find("matrix 57 of 57"), std::string::npos) << lines.back();
    options.progress_after_seconds = 3600;
    lines.clear();
    Weights::load(tinycode_dir(), options);
    EXPECT_TRUE(lines.empty()) << "a quick load says nothing";
}

TEST_P(QuantizedBackend, ARowGetsTheSameBitsInAnyBatchWithAnyThreadCount) {
    auto backend = quantized(GetParam(), 2);
    const auto tokens = random_tokens(kTokens, backend->config().vocab_size, 42);
    const auto prefill = logits_in_chunks(*backend, 0, tokens, {kTokens});
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend, 1, tokens, {1}), prefill)) << "one token at a time";
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend, 2, tokens, {2, 3, 5, 16, 9, 5}), prefill)) << "verify chunks";
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*quantized(GetParam(), 1), 0, tokens, {7, 33}), prefill)) << "1 thread";
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*quantized(GetParam(), 3), 0, tokens, {kTokens}), prefill)) << "3 threads";

    // Beside another stream at other positions, first and last in the batch.
    const auto other = random_tokens(kTokens, backend->config().vocab_size, 7);
    backend->open_stream(3, kTokens + 1);
    backend->open_stream(4, kTokens + 1);
    const size_t vocab = static_cast<size_t>(backend->config().vocab_size);
    std::vector<float> mixed, logits;
    std::vector<model::Row> warm;
    for (int32_t i = 0; i < 9; ++i) warm.push_back({4, i, other[i], false});
    backend->forward(warm, logits);
    for (int32_t at = 0, other_at = 9; at < kTokens; at += 4) {
        std::vector<model::Row> rows;
        const bool ours_first = at % 8 == 0;
        if (!ours_first) rows.push_back({4, other_at, other[other_at], true}), ++other_at;
        for (int32_t i = at; i < std::min(at + 4, kTokens); ++i) rows.push_back({3, i, tokens[i], true});
        if (ours_first && other_at < kTokens) rows.push_back({4, other_at, other[other_at], true}), ++other_at;
        backend->forward(rows, logits);
        const size_t skip = ours_first ? 0 : 1, ours = std::min(at + 4, kTokens) - at;
        mixed.insert(mixed.end(), logits.begin() + skip * vocab, logits.begin() + (skip + ours) * vocab);
    }
    EXPECT_TRUE(bitwise_equal(mixed, prefill)) << "mixed with another stream";
}

TEST_P(QuantizedBackend, EverySimdPathGivesTheSameBits) {
    const auto tokens = random_tokens(12, 8192, 5);
    const auto reference = logits_in_chunks(*quantized(GetParam(), 2, Isa::scalar), 0, tokens, {12});
    for (Isa isa : testing::runnable_isas()) {
        if (isa == Isa::scalar) continue;
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*quantized(GetParam(), 2, isa), 0, tokens, {5, 7}), reference))
            << kernels::isa_name(isa);
    }
}

// The quantization error, not a bug: the logits of a quantized model sit
// near the bf16 model's (f32 activations on both), by a margin that grows
// as the format loses bits.
TEST_P(QuantizedBackend, LogitsStayNearTheBf16Models) {
    const model::QuantType type = GetParam();
    const Isa isa = testing::fastest_isa(Activations::f32);
    const auto tokens = random_tokens(24, 8192, 9);
    auto reference_backend = load_cpu_backend(tinycode_dir(), 2, isa, Activations::f32);
    const auto reference = logits_in_chunks(*reference_backend, 0, tokens, {24});
    WeightOptions options;
    options.quantize = type;
    auto backend = load_cpu_backend(tinycode_dir(), 2, isa, Activations::f32, options);
    const auto ours = logits_in_chunks(*backend, 0, tokens, {24});
    double worst = 0, scale = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
        worst = std::max(worst, std::fabs(static_cast<double>(ours[i]) - reference[i]));
        scale = std::max(scale, std::fabs(static_cast<double>(reference[i])));
    }
    // Measured on this model: 0.030 (q8_0), 0.055 (q6_k), 0.088 (q5_k), 0.17 (q4_0, q4_k).
    const double bound = type == model::QuantType::q8_0   ? 0.05
                         : type == model::QuantType::q6_k ? 0.08
                         : type == model::QuantType::q5_k || type == model::QuantType::q5_0 ? 0.15
                                                          : 0.3;
    EXPECT_LT(worst / scale, bound) << model::quant_type_name(type) << ": largest logit error " << worst
                                    << " against a largest logit of " << scale;
    EXPECT_GT(worst, 0.0) << "the weights really were quantized";
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizedBackend,
                         ::testing::Values(model::QuantType::q8_0, model::QuantType::q4_0, model::QuantType::q4_k,
                                           model::QuantType::q6_k, model::QuantType::q5_k, model::QuantType::q5_0),
                         [](const auto& info) { return std::string(model::quant_type_name(info.param)); });

}  // namespace
}  // namespace tf::cpu
