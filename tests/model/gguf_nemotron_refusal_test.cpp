// A nemotron_h GGUF tensorfold cannot run as its directory is refused by
// name: the key or the tensor, and the file. Files from the test-only
// writer: one Mamba2 layer and one layer of experts.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gguf_writer.h"
#include "model/gguf.h"
#include "model/gguf_model.h"
#include "model/load_error.h"
#include "test_support.h"

namespace tf::model {
namespace {

using testing::GgufWriter;
using testing::TempDir;

struct Options {
    bool experts_gated = false;  // a ffn_gate_exps tensor
    bool mamba_projection_bias = false;
    bool attention_in_mamba_layer = false;
    bool empty_layer = false;  // layer 1 with no mixer at all
    bool router_bias = true;   // exp_probs_b.bias
    std::vector<int32_t> kv_heads = {0, 0};
    uint32_t shared_experts = 1;
    std::optional<uint32_t> gating;  // expert_gating_func
};

// hidden 32; layer 0 Mamba2 of 4 heads of 8 (2 groups, state 8, kernel 4);
// layer 1 4 experts of 16, 2 a token, a shared expert of 16.
GgufWriter two_layers(const Options& o) {
    const std::string k = "nemotron_h_moe.";
    GgufWriter w;
    w.string("general.architecture", "nemotron_h_moe")
        .u32(k + "embedding_length", 32)
        .u32(k + "block_count", 2)
        .u32(k + "context_length", 64)
        .u32(k + "attention.head_count", 2)
        .array<int32_t>(k + "attention.head_count_kv", GgufType::i32, o.kv_heads)
        .array<int32_t>(k + "feed_forward_length", GgufType::i32, {0, 16})
        .u32(k + "attention.key_length", 16)
        .f32(k + "attention.layer_norm_rms_epsilon", 1e-5f)
        .u32(k + "ssm.time_step_rank", 4)
        .u32(k + "ssm.inner_size", 32)
        .u32(k + "ssm.state_size", 8)
        .u32(k + "ssm.group_count", 2)
        .u32(k + "ssm.conv_kernel", 4)
        .u32(k + "expert_count", 4)
        .u32(k + "expert_used_count", 2)
        .u32(k + "expert_feed_forward_length", 16)
        .u32(k + "expert_shared_count", o.shared_experts)
        .u32(k + "expert_shared_feed_forward_length", 16)
        .boolean(k + "expert_weights_norm", true)
        .f32(k + "expert_weights_scale", 1.5f)
        .strings("tokenizer.ggml.tokens", {"a", "b", "c", "d", "e", "f", "g", "h"});
    if (o.gating) w.u32(k + "expert_gating_func", *o.gating);
    w.tensor("token_embd.weight", {32, 8}).tensor("output_norm.weight", {32});
    // in_proj: z 32, xBC 32 + 2 * 2 * 8, dt 4.
    w.tensor("blk.0.attn_norm.weight", {32})
        .tensor("blk.0.ssm_in.weight", {32, 100})
        .tensor("blk.0.ssm_conv1d.weight", {4, 64})
        .tensor("blk.0.ssm_conv1d.bias", {64})
        .tensor("blk.0.ssm_dt.bias", {4})
        .tensor("blk.0.ssm_a", {1, 4})
        .tensor("blk.0.ssm_d", {1, 4})
        .tensor("blk.0.ssm_norm.weight", {16, 2})
        .tensor("blk.0.ssm_out.weight", {32, 32});
    if (o.mamba_projection_bias) w.tensor("blk.0.ssm_in.bias", {100});
    if (o.attention_in_mamba_layer) w.tensor("blk.0.attn_q.weight", {32, 32});
    w.tensor("blk.1.attn_norm.weight", {32});
    if (o.empty_layer) return w;
    w.tensor("blk.1.ffn_gate_inp.weight", {32, 4})
        .tensor("blk.1.ffn_up_exps.weight", {32, 16, 4})
        .tensor("blk.1.ffn_down_exps.weight", {16, 32, 4})
        .tensor("blk.1.ffn_up_shexp.weight", {32, 16})
        .tensor("blk.1.ffn_down_shexp.weight", {16, 32});
    if (o.router_bias) w.tensor("blk.1.exp_probs_b.bias", {4});
    if (o.experts_gated) w.tensor("blk.1.ffn_gate_exps.weight", {32, 16, 4});
    return w;
}

// The LoadError gguf_model_config throws on the file, which must start
// with the file's path.
std::string config_error(const Options& o) {
    TempDir dir;
    const std::string path = dir.str() + "/model.gguf";
    two_layers(o).write(path);
    try {
        (void)gguf_model_config(GgufFile::open(path));
    } catch (const LoadError& e) {
        const std::string message = e.what();
        EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
        return message;
    }
    ADD_FAILURE() << "accepted";
    return {};
}

TEST(GgufNemotronHLayout, TheLayerKindsAndExpertKeysAreTheConfig) {
    TempDir dir;
    two_layers({}).write(dir.str() + "/model.gguf");
    const ModelConfig c = gguf_model_config(GgufFile::open(dir.str() + "/model.gguf"));
    EXPECT_EQ(c.architecture, "NemotronHForCausalLM");
    EXPECT_EQ(c.layer_kinds, (std::vector<LayerKind>{LayerKind::mamba, LayerKind::moe}));
    EXPECT_EQ(c.mamba.num_heads, 4);
    EXPECT_EQ(c.mamba.head_dim, 8);
    EXPECT_EQ(c.mamba.conv_dim(), 64);
    EXPECT_EQ(c.moe.router, RouterKind::sigmoid);
    EXPECT_EQ(c.moe.shared_expert_intermediate, 16);
    EXPECT_EQ(c.moe.routed_scaling_factor, 1.5f);
    EXPECT_TRUE(c.moe.norm_topk_prob);
    EXPECT_TRUE(c.tie_word_embeddings);
}

TEST(GgufNemotronHLayout, TheMambaTensorsTakeTheDirectorysShapes) {
    TempDir dir;
    two_layers({}).write(dir.str() + "/model.gguf");
    auto file = std::make_shared<const GgufFile>(GgufFile::open(dir.str() + "/model.gguf"));
    const ModelConfig c = gguf_model_config(*file);
    // The writer's F32 bytes are positive, which no A = -exp(A_log) is.
    try {
        (void)gguf_checkpoint(file, c);
        FAIL() << "accepted A > 0";
    } catch (const LoadError& e) {
        EXPECT_NE(std::string(e.what()).find("tensor blk.0.ssm_a holds A = "), std::string::npos) << e.what();
    }
}

TEST(GgufNemotronHRefusal, GatedExpertsAreNamed) {
    Options o;
    o.experts_gated = true;
    const std::string message = config_error(o);
    EXPECT_NE(message.find("tensor blk.1.ffn_gate_exps.weight"), std::string::npos) << message;
}

TEST(GgufNemotronHRefusal, AMambaProjectionBiasIsNamed) {
    Options o;
    o.mamba_projection_bias = true;
    const std::string message = config_error(o);
    EXPECT_NE(message.find("tensor blk.0.ssm_in.bias"), std::string::npos) << message;
}

TEST(GgufNemotronHRefusal, ALayerOfTwoMixersNamesBoth) {
    Options o;
    o.attention_in_mamba_layer = true;
    const std::string message = config_error(o);
    EXPECT_NE(message.find("blk.0.ssm_in.weight and blk.0.attn_q.weight"), std::string::npos) << message;
}

TEST(GgufNemotronHRefusal, ALayerWithoutAMixerNamesWhatItLacks) {
    Options o;
    o.empty_layer = true;
    const std::string message = config_error(o);
    EXPECT_NE(message.find("layer 1 has none of blk.1.ssm_in.weight"), std::string::npos) << message;
}

TEST(GgufNemotronHRefusal, AMissingRouterBiasIsNamed) {
    Options o;
    o.router_bias = false;
    const std::string message = config_error(o);
    EXPECT_NE(message.find("tensor blk.1.exp_probs_b.bias is missing"), std::string::npos) << message;
}

TEST(GgufNemotronHRefusal, AnotherGatingFunctionIsNamed) {
    Options o;
    o.gating = 1;
    const std::string message = config_error(o);
    EXPECT_NE(message.find("nemotron_h_moe.expert_gating_func is 1"), std::string::npos) << message;
}

TEST(GgufNemotronHRefusal, MoreThanOneSharedExpertIsNamed) {
    Options o;
    o.shared_experts = 2;
    const std::string message = config_error(o);
    EXPECT_NE(message.find("nemotron_h_moe.expert_shared_count is 2"), std::string::npos) << message;
}

TEST(GgufNemotronHRefusal, KvHeadsOnALayerWithoutAttentionAreNamed) {
    Options o;
    o.kv_heads = {2, 0};
    const std::string message = config_error(o);
    EXPECT_NE(message.find("nemotron_h_moe.attention.head_count_kv is 2 at layer 0"), std::string::npos) << message;
}

}  // namespace
}  // namespace tf::model
