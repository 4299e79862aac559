// make-checkpoint's library: seeded, never-zero weights, the 8B presets'
// shapes, the tokenizer copied beside the weights, and the NemotronH (with and
// without experts), Nemotron and Qwen3-MoE layouts (names, shapes, config
// fields, value ranges).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "cpu/weights.h"
#include "model/checkpoint_writer.h"
#include "model/model_config.h"
#include "test_support.h"

namespace tf::model {
namespace {

uint64_t parameters(const CheckpointSpec& spec) {
    uint64_t total = 0;
    for (const TensorSpec& t : checkpoint_tensors(spec)) {
        uint64_t n = 1;
        for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
        total += n;
    }
    return total;
}

TEST(CheckpointWriter, EightBillionPresetsHaveTheirModelsParameterCounts) {
    EXPECT_EQ(parameters(preset_spec("qwen3-8b")), 8190735360u);   // Qwen3-8B
    EXPECT_EQ(parameters(preset_spec("llama3-8b")), 8030261248u);  // Meta-Llama-3-8B
}

TEST(CheckpointWriter, ValuesAreSeededAndNeverZero) {
    CheckpointSpec a = preset_spec("tiny-llama"), b = a;
    b.seed = a.seed + 1;
    int differ = 0;
    for (uint64_t i = 0; i < 10000; ++i) {
        const float va = checkpoint_value(a, "model.layers.0.mlp.up_proj.weight", {96, 64}, i);
        EXPECT_NE(float_to_bf16(va) & 0x7FFF, 0) << i;
        EXPECT_EQ(va, checkpoint_value(a, "model.layers.0.mlp.up_proj.weight", {96, 64}, i));
        differ += va != checkpoint_value(b, "model.layers.0.mlp.up_proj.weight", {96, 64}, i);
    }
    EXPECT_GT(differ, 9900);
}

TEST(CheckpointWriter, WritesALoadableDirectoryWithTheTokenizerCopied) {
    testing::TempDir dir;
    CheckpointSpec spec = preset_spec("tiny-qwen2");
    spec.eos_token_ids = {3, 4};
    write_checkpoint(spec, dir.str(), testing::tinycode_dir());
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "tokenizer.json"));
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "tokenizer_config.json"));
    ModelConfig c = load_model_config(dir.str());
    EXPECT_EQ(c.architecture, "Qwen2ForCausalLM");
    EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{3, 4}));
    EXPECT_NO_THROW(cpu::Weights::load(dir.str()));
}

std::map<std::string, std::vector<int64_t>> shapes(const CheckpointSpec& spec) {
    std::map<std::string, std::vector<int64_t>> out;
    for (const TensorSpec& t : checkpoint_tensors(spec)) EXPECT_TRUE(out.emplace(t.name, t.shape).second) << t.name;
    return out;
}

nlohmann::json read_config(const testing::TempDir& dir) {
    std::ifstream in(dir.path() / "config.json");
    return nlohmann::json::parse(in);
}

TEST(CheckpointWriter, NemotronHPresetsHaveTheirModelsShapes) {
    // NVIDIA-Nemotron-3-Nano-4B's published count.
    EXPECT_EQ(parameters(preset_spec("nemotron-3-nano-4b")), 3973556832u);
    const CheckpointSpec nano = preset_spec("nemotron-3-nano-4b");
    ASSERT_EQ(nano.hybrid_pattern.size(), 42u);
    EXPECT_EQ(std::count(nano.hybrid_pattern.begin(), nano.hybrid_pattern.end(), 'M'), 21);
    EXPECT_EQ(std::count(nano.hybrid_pattern.begin(), nano.hybrid_pattern.end(), '*'), 4);
    EXPECT_EQ(std::count(nano.hybrid_pattern.begin(), nano.hybrid_pattern.end(), '-'), 17);
    EXPECT_EQ(parameters(preset_spec("nemotron-h-1b")), 1163866368u);
}

TEST(CheckpointWriter, NemotronHLayoutFollowsThePattern) {
    const CheckpointSpec spec = preset_spec("tiny-nemotron-h");  // "M-M*M-", hidden 64
    const auto t = shapes(spec);
    // in_proj: z (64) + xBC (64 + 2*2*16) + dt (8 heads).
    const int64_t conv = 64 + 2 * 2 * 16, proj = 64 + conv + 8;
    EXPECT_EQ(t.at("backbone.embeddings.weight"), (std::vector<int64_t>{256, 64}));
    EXPECT_EQ(t.at("backbone.layers.0.norm.weight"), (std::vector<int64_t>{64}));
    EXPECT_EQ(t.at("backbone.layers.0.mixer.in_proj.weight"), (std::vector<int64_t>{proj, 64}));
    EXPECT_EQ(t.at("backbone.layers.0.mixer.conv1d.weight"), (std::vector<int64_t>{conv, 1, 4}));
    EXPECT_EQ(t.at("backbone.layers.0.mixer.conv1d.bias"), (std::vector<int64_t>{conv}));
    for (const char* name : {"dt_bias", "A_log", "D"}) {
        EXPECT_EQ(t.at(std::string("backbone.layers.2.mixer.") + name), (std::vector<int64_t>{8}));
    }
    EXPECT_EQ(t.at("backbone.layers.4.mixer.norm.weight"), (std::vector<int64_t>{64}));
    EXPECT_EQ(t.at("backbone.layers.4.mixer.out_proj.weight"), (std::vector<int64_t>{64, 64}));
    EXPECT_EQ(t.at("backbone.layers.1.mixer.up_proj.weight"), (std::vector<int64_t>{96, 64}));
    EXPECT_EQ(t.at("backbone.layers.5.mixer.down_proj.weight"), (std::vector<int64_t>{64, 96}));
    EXPECT_EQ(t.at("backbone.layers.3.mixer.q_proj.weight"), (std::vector<int64_t>{64, 64}));
    EXPECT_EQ(t.at("backbone.layers.3.mixer.k_proj.weight"), (std::vector<int64_t>{32, 64}));
    EXPECT_EQ(t.at("backbone.layers.3.mixer.v_proj.weight"), (std::vector<int64_t>{32, 64}));
    EXPECT_EQ(t.at("backbone.layers.3.mixer.o_proj.weight"), (std::vector<int64_t>{64, 64}));
    EXPECT_EQ(t.at("backbone.norm_f.weight"), (std::vector<int64_t>{64}));
    EXPECT_EQ(t.at("lm_head.weight"), (std::vector<int64_t>{256, 64}));
    // Each kind of layer holds its own mixer only, and nothing is biased but the conv.
    EXPECT_EQ(t.count("backbone.layers.1.mixer.in_proj.weight"), 0u);
    EXPECT_EQ(t.count("backbone.layers.0.mixer.q_proj.weight"), 0u);
    EXPECT_EQ(t.count("backbone.layers.6.norm.weight"), 0u);
    // 3 Mamba2 layers x 9, 1 attention x 5, 2 MLP x 3, embeddings, norm_f, lm_head.
    EXPECT_EQ(t.size(), 3u * 9 + 5 + 2 * 3 + 3);

    CheckpointSpec moe = spec;
    moe.hybrid_pattern = "M-E";  // E layers and no experts configured
    EXPECT_THROW(checkpoint_tensors(moe), std::invalid_argument);
    moe.hybrid_pattern = "M-X";
    EXPECT_THROW(checkpoint_tensors(moe), std::invalid_argument);
    moe.hybrid_pattern = "";
    EXPECT_THROW(checkpoint_tensors(moe), std::invalid_argument);
}

TEST(CheckpointWriter, NemotronHConfigAndValues) {
    testing::TempDir dir;
    CheckpointSpec spec = preset_spec("tiny-nemotron-h");
    spec.dtype = DType::f32;
    write_checkpoint(spec, dir.str());
    const nlohmann::json c = read_config(dir);
    EXPECT_EQ(c.at("architectures")[0], "NemotronHForCausalLM");
    EXPECT_EQ(c.at("model_type"), "nemotron_h");
    EXPECT_EQ(c.at("hybrid_override_pattern"), "M-M*M-");
    EXPECT_EQ(c.at("num_hidden_layers"), 6);
    EXPECT_EQ(c.at("mamba_num_heads"), 8);
    EXPECT_EQ(c.at("mamba_head_dim"), 8);
    EXPECT_EQ(c.at("ssm_state_size"), 16);
    EXPECT_EQ(c.at("n_groups"), 2);
    EXPECT_EQ(c.at("conv_kernel"), 4);
    EXPECT_EQ(c.at("head_dim"), 16);
    EXPECT_EQ(c.at("use_conv_bias"), true);
    EXPECT_EQ(c.at("use_bias"), false);
    EXPECT_EQ(c.at("mamba_hidden_act"), "silu");
    EXPECT_EQ(c.at("mlp_hidden_act"), "relu2");
    EXPECT_EQ(c.at("layer_norm_epsilon"), 1e-5);
    EXPECT_EQ(c.at("tie_word_embeddings"), false);
    EXPECT_EQ(c.at("time_step_min"), 0.001);
    EXPECT_FALSE(c.contains("time_step_limit"));  // default (0, inf): no clamp
    EXPECT_FALSE(c.contains("rope_theta"));       // no rotary embedding

    const Checkpoint file = Checkpoint::open(dir.str());
    EXPECT_EQ(file.tensors().size(), checkpoint_tensors(spec).size());
    auto values = [&](const std::string& name) {
        const TensorView& t = *file.find(name);
        std::vector<float> v(t.bytes / 4);
        std::memcpy(v.data(), t.data, t.bytes);
        return v;
    };
    for (float a_log : values("backbone.layers.0.mixer.A_log")) {
        EXPECT_GE(std::exp(a_log), 1.0f);
        EXPECT_LE(std::exp(a_log), 16.0f);
    }
    for (float bias : values("backbone.layers.2.mixer.dt_bias")) {
        const double dt = std::log1p(std::exp(static_cast<double>(bias)));  // softplus
        EXPECT_GE(dt, 0.01 * 0.999);
        EXPECT_LE(dt, 0.1 * 1.001);
    }
    for (float d : values("backbone.layers.4.mixer.D")) {
        EXPECT_GE(d, 0.5f);
        EXPECT_LE(d, 1.5f);
    }
    for (float w : values("backbone.norm_f.weight")) EXPECT_NEAR(w, 1.0f, 0.1f);
    for (float w : values("backbone.layers.0.mixer.norm.weight")) EXPECT_NEAR(w, 1.0f, 0.1f);
}

TEST(CheckpointWriter, NemotronLayoutHasLayerNormBiasesAndNoGate) {
    const CheckpointSpec spec = preset_spec("tiny-nemotron");
    const auto t = shapes(spec);
    EXPECT_EQ(t.at("model.layers.0.input_layernorm.bias"), (std::vector<int64_t>{64}));
    EXPECT_EQ(t.at("model.layers.1.post_attention_layernorm.bias"), (std::vector<int64_t>{64}));
    EXPECT_EQ(t.at("model.norm.bias"), (std::vector<int64_t>{64}));
    EXPECT_EQ(t.at("model.layers.1.mlp.up_proj.weight"), (std::vector<int64_t>{96, 64}));
    EXPECT_EQ(t.at("model.layers.1.self_attn.k_proj.weight"), (std::vector<int64_t>{32, 64}));
    EXPECT_EQ(t.count("model.layers.0.mlp.gate_proj.weight"), 0u);
    EXPECT_EQ(t.count("model.layers.0.self_attn.q_proj.bias"), 0u);
    CheckpointSpec biased = spec;
    biased.attention_bias = true;
    EXPECT_EQ(shapes(biased).at("model.layers.0.self_attn.o_proj.bias"), (std::vector<int64_t>{64}));

    testing::TempDir dir;
    write_checkpoint(spec, dir.str());
    const nlohmann::json c = read_config(dir);
    EXPECT_EQ(c.at("model_type"), "nemotron");
    EXPECT_EQ(c.at("partial_rotary_factor"), 0.5);
    EXPECT_EQ(c.at("norm_eps"), 1e-5);
    EXPECT_EQ(c.at("hidden_act"), "relu2");
    EXPECT_EQ(c.at("rope_theta"), 10000.0);
    EXPECT_EQ(c.at("mlp_bias"), false);
    // LayerNorm1P scales by 1 + weight: the stored weights sit near 0.
    for (uint64_t i = 0; i < 64; ++i) {
        EXPECT_LE(std::fabs(checkpoint_value(spec, "model.layers.0.input_layernorm.weight", {64}, i)), 0.1f);
        EXPECT_LE(std::fabs(checkpoint_value(spec, "model.norm.weight", {64}, i)), 0.1f);
    }
}

TEST(CheckpointWriter, Qwen3MoePresetHasQwen3_30B_A3BsParameterCount) {
    EXPECT_EQ(parameters(preset_spec("qwen3-30b-a3b")), 30532122624u);
    CheckpointSpec fused = preset_spec("qwen3-30b-a3b");
    fused.fused_experts = true;
    EXPECT_EQ(parameters(fused), 30532122624u);
}

TEST(CheckpointWriter, Qwen3MoeSparseLayersHoldARouterAndExperts) {
    const CheckpointSpec spec = preset_spec("tiny-qwen3-moe");  // 3 layers, layer 1 dense
    const auto t = shapes(spec);
    for (const char* layer : {"model.layers.0.", "model.layers.2."}) {
        const std::string p = layer;
        EXPECT_EQ(t.at(p + "mlp.gate.weight"), (std::vector<int64_t>{8, 64}));
        EXPECT_EQ(t.at(p + "mlp.experts.0.gate_proj.weight"), (std::vector<int64_t>{32, 64}));
        EXPECT_EQ(t.at(p + "mlp.experts.7.up_proj.weight"), (std::vector<int64_t>{32, 64}));
        EXPECT_EQ(t.at(p + "mlp.experts.3.down_proj.weight"), (std::vector<int64_t>{64, 32}));
        EXPECT_EQ(t.count(p + "mlp.experts.8.up_proj.weight"), 0u);
        EXPECT_EQ(t.count(p + "mlp.gate_proj.weight"), 0u);
        EXPECT_EQ(t.at(p + "self_attn.q_norm.weight"), (std::vector<int64_t>{16}));
    }
    EXPECT_EQ(t.at("model.layers.1.mlp.gate_proj.weight"), (std::vector<int64_t>{96, 64}));
    EXPECT_EQ(t.at("model.layers.1.mlp.down_proj.weight"), (std::vector<int64_t>{64, 96}));
    EXPECT_EQ(t.count("model.layers.1.mlp.gate.weight"), 0u);
    EXPECT_EQ(t.at("lm_head.weight"), (std::vector<int64_t>{256, 64}));
    // Per layer: 2 norms, q/k/v/o, q/k norms; sparse 1 + 8 * 3, dense 3.
    EXPECT_EQ(t.size(), 3u * 8 + 2 * 25 + 3 + 3);

    CheckpointSpec stepped = spec;
    stepped.num_layers = 4, stepped.decoder_sparse_step = 2, stepped.mlp_only_layers = {3};
    EXPECT_FALSE(is_sparse_layer(stepped, 0));
    EXPECT_TRUE(is_sparse_layer(stepped, 1));
    EXPECT_FALSE(is_sparse_layer(stepped, 2));
    EXPECT_FALSE(is_sparse_layer(stepped, 3));  // (3 + 1) % 2 == 0, but listed dense
}

TEST(CheckpointWriter, FusedExpertsAreTheSameModelStacked) {
    CheckpointSpec spec = preset_spec("tiny-qwen3-moe");
    CheckpointSpec fused = spec;
    fused.fused_experts = true;
    const auto t = shapes(fused);
    EXPECT_EQ(t.at("model.layers.0.mlp.experts.gate_up_proj"), (std::vector<int64_t>{8, 64, 64}));
    EXPECT_EQ(t.at("model.layers.2.mlp.experts.down_proj"), (std::vector<int64_t>{8, 64, 32}));
    EXPECT_EQ(t.at("model.layers.2.mlp.gate.weight"), (std::vector<int64_t>{8, 64}));
    EXPECT_EQ(t.count("model.layers.0.mlp.experts.0.gate_proj.weight"), 0u);
    EXPECT_EQ(t.at("model.layers.1.mlp.up_proj.weight"), (std::vector<int64_t>{96, 64}));
    // Expert 5, row 7, column 9: gate rows first, then up rows.
    const std::string p = "model.layers.2.mlp.experts.";
    const uint64_t gate_up_at = (5 * 64 + 7) * 64 + 9, up_at = (5 * 64 + 32 + 7) * 64 + 9;
    EXPECT_EQ(checkpoint_value(fused, p + "gate_up_proj", {8, 64, 64}, gate_up_at),
              checkpoint_value(spec, p + "5.gate_proj.weight", {32, 64}, 7 * 64 + 9));
    EXPECT_EQ(checkpoint_value(fused, p + "gate_up_proj", {8, 64, 64}, up_at),
              checkpoint_value(spec, p + "5.up_proj.weight", {32, 64}, 7 * 64 + 9));
    EXPECT_EQ(checkpoint_value(fused, p + "down_proj", {8, 64, 32}, (5 * 64 + 7) * 32 + 9),
              checkpoint_value(spec, p + "5.down_proj.weight", {64, 32}, 7 * 32 + 9));
}

TEST(CheckpointWriter, Qwen3MoeConfigReadsBack) {
    testing::TempDir dir;
    write_checkpoint(preset_spec("tiny-qwen3-moe"), dir.str());
    const nlohmann::json c = read_config(dir);
    EXPECT_EQ(c.at("architectures")[0], "Qwen3MoeForCausalLM");
    EXPECT_EQ(c.at("model_type"), "qwen3_moe");
    EXPECT_EQ(c.at("num_experts"), 8);
    EXPECT_EQ(c.at("num_experts_per_tok"), 2);
    EXPECT_EQ(c.at("moe_intermediate_size"), 32);
    EXPECT_EQ(c.at("intermediate_size"), 96);
    EXPECT_EQ(c.at("norm_topk_prob"), true);
    EXPECT_EQ(c.at("decoder_sparse_step"), 1);
    EXPECT_EQ(c.at("mlp_only_layers"), nlohmann::json::array({1}));
    const ModelConfig m = load_model_config(dir.str());
    EXPECT_EQ(m.moe.num_experts, 8);
    EXPECT_EQ(m.moe.experts_per_token, 2);
    EXPECT_EQ(m.moe.expert_intermediate, 32);
    EXPECT_TRUE(m.moe.norm_topk_prob);
    EXPECT_EQ(m.sparse_layers, (std::vector<bool>{true, false, true}));
    const Checkpoint file = Checkpoint::open(dir.str());
    EXPECT_EQ(file.tensors().size(), checkpoint_tensors(preset_spec("tiny-qwen3-moe")).size());
}

TEST(CheckpointWriter, RoutersSpreadTheirLogits) {
    // A matrix's values stay within sqrt(3 / fan_in); a router's reach 3x that.
    const CheckpointSpec spec = preset_spec("tiny-qwen3-moe");
    const float usual = std::sqrt(3.0f / 64.0f);
    float router_max = 0, expert_max = 0;
    for (uint64_t i = 0; i < 8 * 64; ++i) {
        router_max =
            std::max(router_max, std::fabs(checkpoint_value(spec, "model.layers.0.mlp.gate.weight", {8, 64}, i)));
        expert_max = std::max(
            expert_max, std::fabs(checkpoint_value(spec, "model.layers.0.mlp.experts.0.up_proj.weight", {32, 64}, i)));
    }
    EXPECT_LE(expert_max, usual);
    EXPECT_GT(router_max, 2.5f * usual);
    EXPECT_LE(router_max, 3.0f * usual);
}

TEST(CheckpointWriter, Qwen3MoeRefusesExpertsItCannotWrite) {
    CheckpointSpec spec = preset_spec("tiny-qwen3-moe");
    spec.experts_per_token = 9;
    EXPECT_THROW(checkpoint_tensors(spec), std::invalid_argument);
    spec = preset_spec("tiny-qwen3-moe");
    spec.num_experts = 0;
    EXPECT_THROW(checkpoint_tensors(spec), std::invalid_argument);
    spec = preset_spec("tiny-qwen3-moe");
    spec.mlp_only_layers = {3};
    EXPECT_THROW(checkpoint_tensors(spec), std::invalid_argument);
}

TEST(CheckpointWriter, NemotronNano30BPresetHasItsModelsShape) {
    const CheckpointSpec nano = preset_spec("nemotron-3-nano-30b-a3b");
    ASSERT_EQ(nano.hybrid_pattern.size(), 52u);
    EXPECT_EQ(std::count(nano.hybrid_pattern.begin(), nano.hybrid_pattern.end(), 'M'), 23);
    EXPECT_EQ(std::count(nano.hybrid_pattern.begin(), nano.hybrid_pattern.end(), 'E'), 23);
    EXPECT_EQ(std::count(nano.hybrid_pattern.begin(), nano.hybrid_pattern.end(), '*'), 6);
    // NVIDIA quotes 31.6B parameters; these are the published shapes' count.
    EXPECT_EQ(parameters(nano), 31577940288u);
}

TEST(CheckpointWriter, NemotronHMoeLayersHoldRouterBiasExpertsAndASharedExpert) {
    const CheckpointSpec spec = preset_spec("tiny-nemotron-h-moe");  // "ME*EME", 8 experts of 32, shared 48
    const auto t = shapes(spec);
    const std::string p = "backbone.layers.3.mixer.";
    EXPECT_EQ(t.at(p + "gate.weight"), (std::vector<int64_t>{8, 64}));
    EXPECT_EQ(t.at(p + "gate.e_score_correction_bias"), (std::vector<int64_t>{8}));
    EXPECT_EQ(t.at(p + "experts.0.up_proj.weight"), (std::vector<int64_t>{32, 64}));
    EXPECT_EQ(t.at(p + "experts.7.down_proj.weight"), (std::vector<int64_t>{64, 32}));
    EXPECT_EQ(t.count(p + "experts.0.gate_proj.weight"), 0u);  // relu2 experts have no gate
    EXPECT_EQ(t.at(p + "shared_experts.up_proj.weight"), (std::vector<int64_t>{48, 64}));
    EXPECT_EQ(t.at(p + "shared_experts.down_proj.weight"), (std::vector<int64_t>{64, 48}));
    EXPECT_EQ(t.count(p + "fc1_latent_proj.weight"), 0u);
    EXPECT_EQ(t.at("backbone.layers.5.norm.weight"), (std::vector<int64_t>{64}));
    EXPECT_EQ(t.count("backbone.layers.0.mixer.gate.weight"), 0u);  // a Mamba2 layer
    // 2 Mamba2 x 9, 1 attention x 5, 3 MoE x (norm, router, bias, 8 x 2, shared 2), embeddings, norm_f, lm_head.
    EXPECT_EQ(t.size(), 2u * 9 + 5 + 3 * 21 + 3);

    CheckpointSpec latent = spec;
    latent.moe_latent_size = 32;
    const auto l = shapes(latent);
    EXPECT_EQ(l.at(p + "fc1_latent_proj.weight"), (std::vector<int64_t>{32, 64}));
    EXPECT_EQ(l.at(p + "fc2_latent_proj.weight"), (std::vector<int64_t>{64, 32}));
    EXPECT_EQ(l.at(p + "experts.2.up_proj.weight"), (std::vector<int64_t>{32, 32}));
    EXPECT_EQ(l.at(p + "experts.2.down_proj.weight"), (std::vector<int64_t>{32, 32}));
    EXPECT_EQ(l.at(p + "shared_experts.up_proj.weight"), (std::vector<int64_t>{48, 64}));  // full width
    EXPECT_EQ(l.at(p + "gate.weight"), (std::vector<int64_t>{8, 64}));

    CheckpointSpec fused = latent;
    fused.fused_experts = true;
    const auto f = shapes(fused);
    EXPECT_EQ(f.at(p + "experts.up_proj"), (std::vector<int64_t>{8, 32, 32}));
    EXPECT_EQ(f.at(p + "experts.down_proj"), (std::vector<int64_t>{8, 32, 32}));
    EXPECT_EQ(f.count(p + "experts.0.up_proj.weight"), 0u);
    EXPECT_EQ(checkpoint_value(fused, p + "experts.up_proj", {8, 32, 32}, (6 * 32 + 5) * 32 + 4),
              checkpoint_value(latent, p + "experts.6.up_proj.weight", {32, 32}, 5 * 32 + 4));
}

TEST(CheckpointWriter, NemotronHMoeConfigNamesTheRouter) {
    testing::TempDir dir;
    CheckpointSpec spec = preset_spec("tiny-nemotron-h-moe");
    spec.moe_latent_size = 32;
    write_checkpoint(spec, dir.str());
    const nlohmann::json c = read_config(dir);
    EXPECT_EQ(c.at("hybrid_override_pattern"), "ME*EME");
    EXPECT_EQ(c.at("n_routed_experts"), 8);
    EXPECT_EQ(c.at("num_experts_per_tok"), 2);
    EXPECT_EQ(c.at("moe_intermediate_size"), 32);
    EXPECT_EQ(c.at("moe_shared_expert_intermediate_size"), 48);
    EXPECT_EQ(c.at("n_shared_experts"), 1);
    EXPECT_EQ(c.at("n_group"), 2);
    EXPECT_EQ(c.at("topk_group"), 1);
    EXPECT_EQ(c.at("norm_topk_prob"), true);
    EXPECT_EQ(c.at("routed_scaling_factor"), 2.5);
    EXPECT_EQ(c.at("moe_latent_size"), 32);
    EXPECT_EQ(c.at("mlp_hidden_act"), "relu2");

    // Without E layers no MoE field is written: llama.cpp's converter reads
    // num_experts_per_tok as "this is nemotron_h_moe".
    testing::TempDir plain;
    write_checkpoint(preset_spec("tiny-nemotron-h"), plain.str());
    EXPECT_FALSE(read_config(plain).contains("num_experts_per_tok"));
    EXPECT_FALSE(read_config(plain).contains("n_routed_experts"));
}

TEST(CheckpointWriter, NemotronHRouterValuesSpreadAndItsBiasIsSmall) {
    const CheckpointSpec spec = preset_spec("tiny-nemotron-h-moe");
    const float usual = std::sqrt(3.0f / 64.0f);
    float router_max = 0, bias_max = 0;
    for (uint64_t i = 0; i < 8 * 64; ++i) {
        router_max =
            std::max(router_max, std::fabs(checkpoint_value(spec, "backbone.layers.1.mixer.gate.weight", {8, 64}, i)));
    }
    const std::string bias = "backbone.layers.1.mixer.gate.e_score_correction_bias";
    for (uint64_t i = 0; i < 8; ++i) {
        bias_max = std::max(bias_max, std::fabs(checkpoint_value(spec, bias, {8}, i)));
    }
    EXPECT_GT(router_max, 1.5f * usual);
    EXPECT_LE(router_max, 2.0f * usual);
    EXPECT_GT(bias_max, 0.0f);
    EXPECT_LE(bias_max, 0.1f);
}

TEST(CheckpointWriter, NemotronHMoeRefusesRoutersItCannotWrite) {
    const CheckpointSpec good = preset_spec("tiny-nemotron-h-moe");
    CheckpointSpec spec = good;
    spec.expert_groups = 3;  // 8 experts do not split into 3 groups
    EXPECT_THROW(checkpoint_tensors(spec), std::invalid_argument);
    spec = good;
    spec.expert_groups = 8;  // groups of one expert cannot be ranked by their two best
    EXPECT_THROW(checkpoint_tensors(spec), std::invalid_argument);
    spec = good;
    spec.experts_per_token = 5;  // one group of 4 holds only 4
    EXPECT_THROW(checkpoint_tensors(spec), std::invalid_argument);
    spec = good;
    spec.top_groups = 3;
    EXPECT_THROW(checkpoint_tensors(spec), std::invalid_argument);
    spec = good;
    spec.shared_expert_intermediate = 0;
    EXPECT_THROW(checkpoint_tensors(spec), std::invalid_argument);
}

TEST(CheckpointWriter, RoundsToNearestEven) {
    EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(bf16_to_float(float_to_bf16(1.00390625f)), 1.0f);  // halfway: to even
    EXPECT_EQ(float_to_half(1.0f), 0x3C00);
    EXPECT_EQ(float_to_half(-2.0f), 0xC000);
    EXPECT_EQ(half_to_float(float_to_half(65504.0f)), 65504.0f);
    EXPECT_EQ(half_to_float(float_to_half(1e-7f)), half_to_float(2));  // 1.68 x the smallest subnormal: 2 of them
}

}  // namespace
}  // namespace tf::model
