// A GGUF the weight loader cannot run is refused by name: an architecture
// it does not serve (before any tensor is read), a missing key, a tensor
// type it has no kernel for. Files from the test-only writer.
#include <gtest/gtest.h>

#include <random>

#include "cpu/weights.h"
#include "gguf_writer.h"
#include "model/gguf_model.h"
#include "model/load_error.h"
#include "model/quant_blocks.h"
#include "test_support.h"

namespace tf::model {
namespace {

using testing::GgufWriter;
using testing::TempDir;

constexpr uint32_t kQ3_K = 11;  // a real ggml type tensorfold has no kernel for

// A one-layer qwen3 of width 256 (heads of 128), every tensor F32 but
// attn_q, which takes `q_type`.
GgufWriter one_layer(const std::string& arch, uint32_t q_type) {
    GgufWriter w;
    w.string("general.architecture", arch)
        .u32(arch + ".embedding_length", 256)
        .u32(arch + ".block_count", 1)
        .u32(arch + ".attention.head_count", 2)
        .u32(arch + ".attention.head_count_kv", 1)
        .u32(arch + ".attention.key_length", 128)
        .u32(arch + ".feed_forward_length", 256)
        .u32(arch + ".context_length", 512)
        .f32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f)
        .strings("tokenizer.ggml.tokens", {"a", "b", "c", "d", "e", "f", "g", "h"});
    w.tensor("token_embd.weight", {256, 8}).tensor("output_norm.weight", {256}).tensor("blk.0.attn_norm.weight", {256});
    GgufWriter::Tensor q{"blk.0.attn_q.weight", {256, 256}, q_type, {}, {}, {}};
    if (q_type == kQ3_K) q.data_bytes = 256 * 110;  // 256 rows of one 110-byte block
    w.tensor(q)
        .tensor("blk.0.attn_k.weight", {256, 128})
        .tensor("blk.0.attn_v.weight", {256, 128})
        .tensor("blk.0.attn_output.weight", {256, 256})
        .tensor("blk.0.attn_q_norm.weight", {128})
        .tensor("blk.0.attn_k_norm.weight", {128})
        .tensor("blk.0.ffn_norm.weight", {256})
        .tensor("blk.0.ffn_gate.weight", {256, 256})
        .tensor("blk.0.ffn_up.weight", {256, 256})
        .tensor("blk.0.ffn_down.weight", {256, 256});
    return w;
}

std::string load_error(const GgufWriter& w) {
    TempDir dir;
    const std::string path = dir.str() + "/model.gguf";
    w.write(path);
    try {
        (void)cpu::Weights::load(path);
    } catch (const LoadError& e) {
        const std::string message = e.what();
        EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
        return message;
    }
    ADD_FAILURE() << "loaded";
    return {};
}

TEST(GgufModelRefusal, TheWellFormedFileLoads) {
    TempDir dir;
    one_layer("qwen3", ggml_type::f32).write(dir.str() + "/model.gguf");
    auto weights = cpu::Weights::load(dir.str() + "/model.gguf");
    EXPECT_EQ(weights->config().num_layers, 1);
    EXPECT_EQ(weights->config().head_dim, 128);
    EXPECT_TRUE(weights->config().tie_word_embeddings);
}

TEST(GgufModelRefusal, AnArchitectureItDoesNotServe) {
    const std::string message = load_error(one_layer("gemma2", ggml_type::f32));
    EXPECT_NE(message.find("general.architecture \"gemma2\""), std::string::npos) << message;
    EXPECT_NE(message.find("llama, qwen2, qwen3"), std::string::npos) << message;
}

TEST(GgufModelRefusal, AMissingKey) {
    GgufWriter w;
    w.string("general.architecture", "llama").u32("llama.block_count", 1);
    const std::string message = load_error(w);
    EXPECT_NE(message.find("llama.embedding_length is missing"), std::string::npos) << message;
}

TEST(GgufModelRefusal, ATensorTypeWithoutAKernelNamesTheTensorAndType) {
    const std::string message = load_error(one_layer("qwen3", kQ3_K));
    EXPECT_NE(message.find("blk.0.attn_q.weight"), std::string::npos) << message;
    EXPECT_NE(message.find("Q3_K"), std::string::npos) << message;
}

}  // namespace
}  // namespace tf::model

namespace tf::model {
namespace {

// Q5_0 blocks as read here must be the very weights ggml means: checked
// against Q5_0's dequantization written out the way ggml spells it (the
// fifth bit of element j at bit j of qh, of element j + 16 at bit j + 16).
TEST(GgufQ5_0, BlocksMeanWhatGgmlDequantizesThemTo) {
    std::mt19937 rng(7);
    constexpr int kBlocks = 64;
    std::vector<std::byte> q5(kBlocks * 22);
    for (auto& b : q5) b = static_cast<std::byte>(rng() & 0xFF);
    for (int b = 0; b < kBlocks; ++b) {  // a finite fp16 scale: exponent below 31
        q5[b * 22 + 1] = static_cast<std::byte>(static_cast<uint8_t>(q5[b * 22 + 1]) & 0x7B);
    }
    std::vector<float> ours(kBlocks * 32);
    model::dequantize_row(model::QuantType::q5_0, q5.data(), kBlocks * 32, ours.data());
    for (int b = 0; b < kBlocks; ++b) {
        const auto* block = reinterpret_cast<const uint8_t*>(q5.data() + b * 22);
        const float d = half_to_float(static_cast<uint16_t>(block[0] | (block[1] << 8)));
        const uint32_t qh = block[2] | (block[3] << 8) | (block[4] << 16) | (uint32_t{block[5]} << 24);
        for (int j = 0; j < 16; ++j) {
            const int x0 = ((block[6 + j] & 0x0F) | (((qh >> j) << 4) & 0x10)) - 16;
            const int x1 = ((block[6 + j] >> 4) | ((qh >> (j + 12)) & 0x10)) - 16;
            EXPECT_EQ(ours[b * 32 + j], x0 * d) << "block " << b << " element " << j;
            EXPECT_EQ(ours[b * 32 + j + 16], x1 * d) << "block " << b << " element " << j + 16;
        }
    }
}

}  // namespace
}  // namespace tf::model
