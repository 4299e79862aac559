// A qwen3moe GGUF as a model, on files from the test-only writer: the
// MoeConfig its expert keys describe, which layers are sparse, each
// expert's matrix as a view into the stacked tensor, the router handed over
// in F32, and the variants the forward does not run refused by name. The
// real file llama.cpp's tools made is in gguf_moe_test.cpp.
#include <gtest/gtest.h>

#include <functional>

#include "cpu/weights.h"
#include "gguf_writer.h"
#include "model/gguf.h"
#include "model/gguf_model.h"
#include "model/load_error.h"
#include "model/quant_blocks.h"
#include "test_support.h"

namespace tf::model {
namespace {

using testing::GgufWriter;
using testing::TempDir;

constexpr uint64_t kHidden = 64, kExperts = 4, kExpertFf = 32, kLayers = 2;

struct MoeFile {
    uint32_t router_type = ggml_type::f32;
    uint32_t expert_type = ggml_type::q8_0;
    int dense_layer = -1;       // this layer gets ffn_gate/up/down and no router
    bool fused = false;         // ffn_gate_up_exps instead of ffn_gate_exps + ffn_up_exps
    bool expert_ff_key = true;  // write qwen3moe.expert_feed_forward_length
    uint64_t expert_ff = kExpertFf;
    uint32_t experts_per_token = 2;
    std::string leave_out;                  // a tensor not written
    std::function<void(GgufWriter&)> more;  // extra keys or tensors
};

// A two-layer qwen3moe of width 64 (two heads of 32), four experts of width
// 32, two per token.
GgufWriter moe_writer(const MoeFile& o) {
    GgufWriter w;
    const std::string a = "qwen3moe.";
    w.string("general.architecture", "qwen3moe")
        .u32(a + "embedding_length", kHidden)
        .u32(a + "block_count", kLayers)
        .u32(a + "attention.head_count", 2)
        .u32(a + "attention.head_count_kv", 1)
        .u32(a + "attention.key_length", 32)
        .u32(a + "feed_forward_length", 128)
        .u32(a + "context_length", 512)
        .f32(a + "attention.layer_norm_rms_epsilon", 1e-6f)
        .u32(a + "expert_count", kExperts)
        .u32(a + "expert_used_count", o.experts_per_token)
        .strings("tokenizer.ggml.tokens", {"a", "b", "c", "d", "e", "f", "g", "h"});
    if (o.expert_ff_key) w.u32(a + "expert_feed_forward_length", o.expert_ff);
    if (o.more) o.more(w);
    auto add = [&](const std::string& name, std::vector<uint64_t> dims, uint32_t type = ggml_type::f32) {
        if (name != o.leave_out) w.tensor(name, std::move(dims), type);
    };
    add("token_embd.weight", {kHidden, 8});
    add("output_norm.weight", {kHidden});
    for (uint64_t i = 0; i < kLayers; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        add(b + "attn_norm.weight", {kHidden});
        add(b + "attn_q.weight", {kHidden, 64});
        add(b + "attn_k.weight", {kHidden, 32});
        add(b + "attn_v.weight", {kHidden, 32});
        add(b + "attn_output.weight", {64, kHidden});
        add(b + "attn_q_norm.weight", {32});
        add(b + "attn_k_norm.weight", {32});
        add(b + "ffn_norm.weight", {kHidden});
        if (static_cast<int>(i) == o.dense_layer) {
            add(b + "ffn_gate.weight", {kHidden, 128});
            add(b + "ffn_up.weight", {kHidden, 128});
            add(b + "ffn_down.weight", {128, kHidden});
            continue;
        }
        add(b + "ffn_gate_inp.weight", {kHidden, kExperts}, o.router_type);
        if (o.fused) {
            add(b + "ffn_gate_up_exps.weight", {kHidden, 2 * o.expert_ff, kExperts}, o.expert_type);
        } else {
            add(b + "ffn_gate_exps.weight", {kHidden, o.expert_ff, kExperts}, o.expert_type);
            add(b + "ffn_up_exps.weight", {kHidden, o.expert_ff, kExperts}, o.expert_type);
        }
        add(b + "ffn_down_exps.weight", {o.expert_ff, kHidden, kExperts}, o.expert_type);
    }
    return w;
}

// The file written and opened; `dir` keeps it alive.
GgufFile open_moe(const TempDir& dir, const MoeFile& o) {
    const std::string path = dir.str() + "/moe.gguf";
    moe_writer(o).write(path);
    return GgufFile::open(path);
}

// gguf_model_config's refusal of the file, which must name it first.
std::string config_error(const MoeFile& o) {
    TempDir dir;
    const GgufFile file = open_moe(dir, o);
    try {
        (void)gguf_model_config(file);
    } catch (const LoadError& e) {
        const std::string message = e.what();
        EXPECT_EQ(message.rfind(file.path() + ": ", 0), 0u) << message;
        return message;
    }
    ADD_FAILURE() << "accepted";
    return {};
}

TEST(GgufMoe, TheExpertKeysAreTheMoeConfig) {
    TempDir dir;
    const ModelConfig c = gguf_model_config(open_moe(dir, {}));
    EXPECT_EQ(c.architecture, "Qwen3MoeForCausalLM");
    EXPECT_EQ(c.family, Family::qwen3);
    EXPECT_TRUE(c.qk_norm);
    EXPECT_EQ(c.moe.num_experts, 4);
    EXPECT_EQ(c.moe.experts_per_token, 2);
    EXPECT_EQ(c.moe.expert_intermediate, 32);
    EXPECT_EQ(c.moe.router, RouterKind::softmax);
    EXPECT_EQ(c.intermediate_size, 128);
    EXPECT_EQ(c.sparse_layers, (std::vector<bool>{true, true}));
    EXPECT_EQ(c.expert_layer_count(), 2);
}

// llama.cpp renormalizes a qwen3moe token's top-k weights whatever the file
// holds, and its converter writes no key for it.
TEST(GgufMoe, TopKWeightsAreRenormalizedAsLlamaCppDoesWithoutAKey) {
    TempDir dir;
    EXPECT_TRUE(gguf_model_config(open_moe(dir, {})).moe.norm_topk_prob);
}

TEST(GgufMoe, AnExpertWeightsNormKeyIsTakenAtItsWord) {
    TempDir dir;
    MoeFile o;
    o.more = [](GgufWriter& w) { w.boolean("qwen3moe.expert_weights_norm", false); };
    EXPECT_FALSE(gguf_model_config(open_moe(dir, o)).moe.norm_topk_prob);
}

TEST(GgufMoe, WithoutExpertFeedForwardLengthTheWidthIsLlamaCppsQuotient) {
    TempDir dir;
    MoeFile o;
    o.expert_ff_key = false;
    o.expert_ff = 64;  // feed_forward_length 128 / 2 experts a token
    EXPECT_EQ(gguf_model_config(open_moe(dir, o)).moe.expert_intermediate, 64);
}

TEST(GgufMoe, ALayerWithADenseMlpAndNoRouterIsDense) {
    TempDir dir;
    MoeFile o;
    o.dense_layer = 0;
    const ModelConfig c = gguf_model_config(open_moe(dir, o));
    EXPECT_EQ(c.sparse_layers, (std::vector<bool>{false, true}));
    EXPECT_FALSE(c.has_experts(0));
    EXPECT_TRUE(c.has_experts(1));
}

TEST(GgufMoe, EachExpertIsAViewOfItsRowsInTheStackedTensor) {
    TempDir dir;
    auto file = std::make_shared<const GgufFile>(open_moe(dir, {}));
    const ModelConfig c = gguf_model_config(*file);
    const Checkpoint ckpt = gguf_checkpoint(file, c);
    const size_t row_bytes = quant_row_bytes(QuantType::q8_0, kHidden);  // gate and up: rows of 64
    for (const char* proj : {"gate", "up", "down"}) {
        const GgufTensor* stacked = file->find_tensor("blk.1.ffn_" + std::string(proj) + "_exps.weight");
        ASSERT_NE(stacked, nullptr);
        const size_t expert_bytes = stacked->bytes / kExperts;
        for (uint64_t e = 0; e < kExperts; ++e) {
            const std::string name = "model.layers.1.mlp.experts." + std::to_string(e) + "." + proj + "_proj.weight";
            const TensorView* v = ckpt.find(name);
            ASSERT_NE(v, nullptr) << name;
            const bool down = std::string(proj) == "down";
            EXPECT_EQ(v->shape, (down ? std::vector<int64_t>{64, 32} : std::vector<int64_t>{32, 64})) << name;
            EXPECT_EQ(v->quant, QuantType::q8_0) << name;
            EXPECT_EQ(v->data, stacked->data + e * expert_bytes) << name;
            EXPECT_EQ(v->bytes, expert_bytes) << name;
            if (!down) {
                EXPECT_EQ(v->bytes, 32 * row_bytes) << name;
            }
            EXPECT_NE(
                v->stored_name.find("blk.1.ffn_" + std::string(proj) + "_exps.weight, expert " + std::to_string(e)),
                std::string::npos)
                << v->stored_name;
        }
        // The stacked tensor itself is not handed on under any name.
        EXPECT_EQ(ckpt.find("blk.1.ffn_" + std::string(proj) + "_exps.weight"), nullptr);
    }
}

TEST(GgufMoe, AFusedGateUpTensorSplitsIntoGateRowsThenUpRows) {
    TempDir dir;
    MoeFile o;
    o.fused = true;
    auto file = std::make_shared<const GgufFile>(open_moe(dir, o));
    const Checkpoint ckpt = gguf_checkpoint(file, gguf_model_config(*file));
    const GgufTensor* fused = file->find_tensor("blk.0.ffn_gate_up_exps.weight");
    ASSERT_NE(fused, nullptr);
    const size_t expert_bytes = fused->bytes / kExperts;
    for (uint64_t e = 0; e < kExperts; ++e) {
        const std::string prefix = "model.layers.0.mlp.experts." + std::to_string(e) + ".";
        const TensorView* gate = ckpt.find(prefix + "gate_proj.weight");
        const TensorView* up = ckpt.find(prefix + "up_proj.weight");
        ASSERT_TRUE(gate && up) << prefix;
        EXPECT_EQ(gate->shape, (std::vector<int64_t>{32, 64}));
        EXPECT_EQ(up->shape, (std::vector<int64_t>{32, 64}));
        EXPECT_EQ(gate->data, fused->data + e * expert_bytes);
        EXPECT_EQ(up->data, fused->data + e * expert_bytes + expert_bytes / 2);
        EXPECT_EQ(gate->bytes, expert_bytes / 2);
    }
}

TEST(GgufMoe, TheRouterIsHandedOnInF32WhateverTheFileStores) {
    TempDir dir;
    {
        auto file = std::make_shared<const GgufFile>(open_moe(dir, {}));
        const Checkpoint ckpt = gguf_checkpoint(file, gguf_model_config(*file));
        const TensorView* router = ckpt.find("model.layers.0.mlp.gate.weight");
        ASSERT_NE(router, nullptr);
        EXPECT_EQ(router->dtype, DType::f32);
        EXPECT_EQ(router->shape, (std::vector<int64_t>{4, 64}));
        EXPECT_EQ(router->data, file->find_tensor("blk.0.ffn_gate_inp.weight")->data);  // no copy
    }
    for (uint32_t type : {ggml_type::bf16, ggml_type::f16, ggml_type::q8_0}) {
        TempDir d;
        MoeFile o;
        o.router_type = type;
        auto file = std::make_shared<const GgufFile>(open_moe(d, o));
        const Checkpoint ckpt = gguf_checkpoint(file, gguf_model_config(*file));
        const TensorView* router = ckpt.find("model.layers.0.mlp.gate.weight");
        ASSERT_NE(router, nullptr);
        EXPECT_EQ(router->dtype, DType::f32) << ggml_type_name(type);
        EXPECT_FALSE(router->quant.has_value());
        EXPECT_EQ(router->shape, (std::vector<int64_t>{4, 64}));
        ASSERT_EQ(router->bytes, 4u * 64 * 4);
        // The writer fills a tensor with one byte value: every weight is the
        // file's first weight, read here on its own.
        const std::byte* raw = file->find_tensor("blk.0.ffn_gate_inp.weight")->data;
        float expected = 0;
        if (type == ggml_type::q8_0) {
            float block[32];
            dequantize_row(QuantType::q8_0, raw, 32, block);
            expected = block[0];
        } else {
            uint16_t bits;
            std::memcpy(&bits, raw, 2);
            expected = type == ggml_type::bf16 ? bf16_to_float(bits) : half_to_float(bits);
        }
        const auto* weights = reinterpret_cast<const float*>(router->data);
        for (int i = 0; i < 4 * 64; ++i) ASSERT_EQ(weights[i], expected) << ggml_type_name(type) << " weight " << i;
    }
}

// Through the CPU weight loader, which takes routers in float types only: a
// Q8_0 router arrives there already dequantized, and a dense layer between
// sparse ones loads as a dense MLP.
TEST(GgufMoe, AFileWithAQuantizedRouterAndADenseLayerLoads) {
    TempDir dir;
    MoeFile o;
    o.router_type = ggml_type::q8_0;
    o.dense_layer = 0;
    const std::string path = dir.str() + "/moe.gguf";
    moe_writer(o).write(path);
    auto weights = cpu::Weights::load(path);
    EXPECT_EQ(weights->config().architecture, "Qwen3MoeForCausalLM");
    EXPECT_EQ(weights->config().sparse_layers, (std::vector<bool>{false, true}));
    EXPECT_EQ(weights->config().moe.num_experts, 4);
    EXPECT_TRUE(weights->layers()[0].experts.empty());
    EXPECT_EQ(weights->layers()[0].w_up.rows, 128);
    ASSERT_EQ(weights->layers()[1].experts.size(), 4u);
    EXPECT_EQ(weights->layers()[1].router.rows, 4);
    EXPECT_EQ(weights->layers()[1].experts[3].w_down.rows, 64);
    EXPECT_EQ(weights->layers()[1].experts[3].w_down.cols, 32);
}

TEST(GgufMoeRefusal, ARouterTypeWithoutAReaderNamesTheRouter) {
    TempDir dir;
    MoeFile o;
    // Q4_1 (type 3), a real ggml type tensorfold has no reader for; the
    // writer does not know its size: 4 rows of two 20-byte blocks.
    o.more = [](GgufWriter& w) { w.tensor({"blk.0.ffn_gate_inp.weight", {kHidden, kExperts}, 3, {}, 4 * 2 * 20, {}}); };
    o.leave_out = "blk.0.ffn_gate_inp.weight";
    auto file = std::make_shared<const GgufFile>(open_moe(dir, o));
    try {
        (void)gguf_checkpoint(file, gguf_model_config(*file));
        ADD_FAILURE() << "accepted";
    } catch (const LoadError& e) {
        EXPECT_NE(std::string(e.what()).find("blk.0.ffn_gate_inp.weight (the router) has type Q4_1"), std::string::npos)
            << e.what();
    }
}

TEST(GgufMoeRefusal, VariantsTheForwardDoesNotRunAreRefusedByName) {
    const std::pair<std::function<void(GgufWriter&)>, std::string> cases[] = {
        {[](GgufWriter& w) { w.u32("qwen3moe.expert_gating_func", 2); }, "qwen3moe.expert_gating_func is 2"},
        {[](GgufWriter& w) { w.u32("qwen3moe.expert_group_count", 4); }, "qwen3moe.expert_group_count is 4"},
        {[](GgufWriter& w) { w.u32("qwen3moe.expert_shared_count", 1); }, "qwen3moe.expert_shared_count is 1"},
        {[](GgufWriter& w) { w.u32("qwen3moe.expert_shared_feed_forward_length", 64); },
         "qwen3moe.expert_shared_feed_forward_length is 64"},
        {[](GgufWriter& w) { w.f32("qwen3moe.expert_weights_scale", 2.5f); }, "qwen3moe.expert_weights_scale is 2.5"},
        {[](GgufWriter& w) { w.u32("qwen3moe.leading_dense_block_count", 1); },
         "leading_dense_block_count is 1 but layer 0 has a router"},
        {[](GgufWriter& w) { w.tensor("blk.1.ffn_gate_inp_shexp.weight", {kHidden}); },
         "tensor blk.1.ffn_gate_inp_shexp.weight is not one"},
        {[](GgufWriter& w) { w.tensor("blk.0.exp_probs_b.bias", {kExperts}); },
         "tensor blk.0.exp_probs_b.bias is not one"},
        {[](GgufWriter& w) {
             w.tensor("blk.0.ffn_up.weight", {kHidden, 128});
         },
         "layer 0 has both a router (blk.0.ffn_gate_inp.weight) and a dense MLP (blk.0.ffn_up.weight)"},
    };
    for (const auto& [more, needle] : cases) {
        MoeFile o;
        o.more = more;
        const std::string message = config_error(o);
        EXPECT_NE(message.find(needle), std::string::npos) << "expected \"" << needle << "\" in: " << message;
    }
}

TEST(GgufMoeRefusal, MoreExpertsATokenThanThereAreExperts) {
    MoeFile o;
    o.experts_per_token = 5;
    const std::string message = config_error(o);
    EXPECT_NE(message.find("qwen3moe.expert_used_count 5 is more than expert_count 4"), std::string::npos) << message;
}

TEST(GgufMoeRefusal, AMissingRouterOrExpertTensorIsNamed) {
    const std::pair<std::string, std::string> cases[] = {
        {"blk.1.ffn_gate_inp.weight", "tensor blk.1.ffn_gate_inp.weight is missing (layer 1 has neither experts nor"},
        {"blk.0.ffn_down_exps.weight", "tensor blk.0.ffn_down_exps.weight is missing (layer 0 has a router)"},
        {"blk.1.ffn_up_exps.weight", "tensor blk.1.ffn_up_exps.weight is missing"},
    };
    for (const auto& [leave_out, needle] : cases) {
        MoeFile o;
        o.leave_out = leave_out;
        const std::string message = config_error(o);
        EXPECT_NE(message.find(needle), std::string::npos) << message;
    }
}

TEST(GgufMoeRefusal, AStackedTensorOfAnotherExpertCountIsNamed) {
    TempDir dir;
    MoeFile o;
    o.leave_out = "blk.0.ffn_up_exps.weight";
    o.more = [](GgufWriter& w) { w.tensor("blk.0.ffn_up_exps.weight", {kHidden, kExpertFf, 3}, ggml_type::q8_0); };
    auto file = std::make_shared<const GgufFile>(open_moe(dir, o));
    try {
        (void)gguf_checkpoint(file, gguf_model_config(*file));
        ADD_FAILURE() << "accepted";
    } catch (const LoadError& e) {
        const std::string message = e.what();
        EXPECT_EQ(
            message.rfind(file->path() + ": tensor blk.0.ffn_up_exps.weight has shape [3, 32, 64], expected [4,", 0),
            0u)
            << message;
    }
}

}  // namespace
}  // namespace tf::model
