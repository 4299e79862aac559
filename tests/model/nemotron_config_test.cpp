// config.json for NVIDIA's two families: NemotronH's layer kinds from either
// spelling, its Mamba2 fields (older names included), time_step_limit
// written with a bare Infinity as Python writes it, and Nemotron's
// LayerNorm1P / squared ReLU / partial RoPE. Everything we cannot run is a
// LoadError naming the file and the field, before any weight is read.
#include <gtest/gtest.h>

#include <cmath>

#include "model/load_error.h"
#include "model/model_config.h"
#include "test_support.h"

namespace tf::model {
namespace {

std::string nemotron_h(const std::string& extra, const std::string& layers = R"("hybrid_override_pattern": "M-M*-")") {
    return R"({"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 64,
        "vocab_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "intermediate_size": 96, "mamba_num_heads": 8, "mamba_head_dim": 8, "ssm_state_size": 16,
        "n_groups": 2, "conv_kernel": 4, "max_position_embeddings": 1024, )" +
           layers + extra + "}";
}

using testing::expect_load_error;

TEST(NemotronHConfig, ThePatternNamesEveryLayerAndTheMambaShapeFollows) {
    const ModelConfig c = parse_model_config(nemotron_h(""), "DIR/config.json");
    EXPECT_EQ(c.family, Family::nemotron_h);
    ASSERT_EQ(c.num_layers, 5);
    EXPECT_EQ(c.layer_kinds, (std::vector<LayerKind>{LayerKind::mamba, LayerKind::mlp, LayerKind::mamba,
                                                     LayerKind::attention, LayerKind::mlp}));
    EXPECT_TRUE(c.recurrent());
    EXPECT_EQ(c.attention_layer_count(), 1);
    EXPECT_FALSE(c.rotary);
    EXPECT_EQ(c.rope_dim(), 0);
    EXPECT_EQ(c.mlp, MlpKind::relu2);
    EXPECT_EQ(c.mamba.inner(), 64);
    EXPECT_EQ(c.mamba.conv_dim(), 64 + 2 * 2 * 16);
    EXPECT_EQ(c.mamba.in_proj_rows(), 64 + 128 + 8);
    EXPECT_TRUE(c.mamba.conv_bias);
    EXPECT_FALSE(c.mamba.proj_bias);
    EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-5f);  // layer_norm_epsilon's default
    EXPECT_EQ(c.mamba.dt_min, 0.0f);
    EXPECT_TRUE(std::isinf(c.mamba.dt_max));
}

TEST(NemotronHConfig, LayersBlockTypeInEitherSpellingEqualsThePattern) {
    const std::string old_names = R"("layers_block_type": ["mamba", "mlp", "mamba", "attention", "mlp"])";
    const std::string new_names =
        R"("layers_block_type": ["linear_attention", "mlp", "linear_attention", "full_attention", "mlp"])";
    const ModelConfig pattern = parse_model_config(nemotron_h(""), "DIR/config.json");
    EXPECT_EQ(parse_model_config(nemotron_h("", old_names), "DIR/config.json").layer_kinds, pattern.layer_kinds);
    EXPECT_EQ(parse_model_config(nemotron_h("", new_names), "DIR/config.json").layer_kinds, pattern.layer_kinds);
}

TEST(NemotronHConfig, TimeStepLimitReadsPythonsBareInfinityAndTransformersSpellings) {
    for (const std::string limit :
         {R"([0.0, Infinity])", R"([0.0, "Infinity"])", R"([0.0, {"__float__": "Infinity"}])"}) {
        const ModelConfig c = parse_model_config(nemotron_h(R"(, "time_step_limit": )" + limit), "DIR/config.json");
        EXPECT_EQ(c.mamba.dt_min, 0.0f) << limit;
        EXPECT_TRUE(std::isinf(c.mamba.dt_max)) << limit;
    }
    const ModelConfig clamped =
        parse_model_config(nemotron_h(R"(, "time_step_limit": [0.001, 0.1])"), "DIR/config.json");
    EXPECT_FLOAT_EQ(clamped.mamba.dt_min, 0.001f);
    EXPECT_FLOAT_EQ(clamped.mamba.dt_max, 0.1f);
    // A string that only looks like Infinity stays what it was.
    EXPECT_EQ(parse_model_config(nemotron_h(R"(, "torch_dtype": "Infinity")"), "DIR/config.json").torch_dtype,
              "Infinity");
}

TEST(NemotronHConfig, OlderFieldNamesAreRead) {
    const std::string text = R"({"architectures": ["NemotronHForCausalLM"], "hidden_size": 64, "vocab_size": 256,
        "attention_head_dim": 32, "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 96,
        "mamba_num_heads": 4, "mamba_head_dim": 16, "ssm_state_size": 8, "mamba_n_groups": 1, "mamba_d_conv": 3,
        "mamba_conv_bias": false, "hybrid_override_pattern": "M*"})";
    const ModelConfig c = parse_model_config(text, "DIR/config.json");
    EXPECT_EQ(c.head_dim, 32);
    EXPECT_EQ(c.mamba.groups, 1);
    EXPECT_EQ(c.mamba.conv_kernel, 3);
    EXPECT_FALSE(c.mamba.conv_bias);
    EXPECT_EQ(c.max_position_embeddings, 4096);  // transformers' default
}

TEST(NemotronHConfig, ExpertLayersReadTheSigmoidRouterTheSharedExpertAndTheLatentWidth) {
    const std::string experts = R"(, "n_routed_experts": 16, "num_experts_per_tok": 3, "moe_intermediate_size": 32,
        "moe_shared_expert_intermediate_size": 48, "n_group": 4, "topk_group": 2, "routed_scaling_factor": 2.5,
        "moe_latent_size": 24)";
    const ModelConfig c = parse_model_config(nemotron_h(experts, R"("hybrid_override_pattern": "ME*E")"), "DIR/config.json");
    EXPECT_EQ(c.layer_kinds, (std::vector<LayerKind>{LayerKind::mamba, LayerKind::moe, LayerKind::attention, LayerKind::moe}));
    EXPECT_TRUE(c.has_experts(1) && c.has_mlp(1) && !c.has_attention(1));
    EXPECT_EQ(c.expert_layer_count(), 2);
    EXPECT_EQ(c.moe.router, RouterKind::sigmoid);
    EXPECT_EQ(c.moe.num_experts, 16);
    EXPECT_EQ(c.moe.experts_per_token, 3);
    EXPECT_EQ(c.moe.expert_intermediate, 32);
    EXPECT_EQ(c.moe.shared_expert_intermediate, 48);
    EXPECT_EQ(c.moe.groups, 4);
    EXPECT_EQ(c.moe.top_groups, 2);
    EXPECT_TRUE(c.moe.norm_topk_prob);  // transformers' default
    EXPECT_FLOAT_EQ(c.moe.routed_scaling_factor, 2.5f);
    EXPECT_EQ(c.moe.latent_size, 24);
    // transformers 5's spelling of the layer list.
    const ModelConfig listed = parse_model_config(nemotron_h(experts, R"("layers_block_type": ["mamba", "moe"])"), "DIR/config.json");
    EXPECT_EQ(listed.layer_kinds, (std::vector<LayerKind>{LayerKind::mamba, LayerKind::moe}));

    expect_load_error(nemotron_h(R"(, "n_routed_experts": 10, "n_group": 4)", R"("hybrid_override_pattern": "ME")"),
                      "the groups must split the experts evenly");
    expect_load_error(nemotron_h(R"(, "n_routed_experts": 8, "n_group": 4, "topk_group": 1, "num_experts_per_tok": 3)",
                                 R"("hybrid_override_pattern": "ME")"),
                      "hold enough of them");
    // transformers builds its one shared expert whatever n_shared_experts says.
    EXPECT_EQ(parse_model_config(nemotron_h(R"(, "n_shared_experts": 2)", R"("hybrid_override_pattern": "ME")"), "c")
                  .moe.shared_expert_intermediate,
              7688);
    expect_load_error(nemotron_h(R"(, "moe_intermediate_size": 0)", R"("hybrid_override_pattern": "ME")"),
                      "\"moe_intermediate_size\" must be positive");
}

TEST(NemotronHConfig, WhatCannotRunIsRefusedByName) {
    expect_load_error(nemotron_h("", R"("hybrid_override_pattern": "M-X")"), "'X' at layer 2");
    expect_load_error(nemotron_h("", R"("hybrid_override_pattern": "")"), "no layers");
    expect_load_error(nemotron_h("", R"("num_hidden_layers": 3)"), "hybrid_override_pattern");
    expect_load_error(nemotron_h(R"(, "n_groups": 3)"), "mamba_num_heads 8 is not a multiple of n_groups 3");
    expect_load_error(nemotron_h(R"(, "mamba_hidden_act": "gelu")"), "mamba_hidden_act \"gelu\"");
    expect_load_error(nemotron_h(R"(, "mlp_hidden_act": "silu")"), "mlp_hidden_act \"silu\"");
    expect_load_error(nemotron_h(R"(, "time_step_limit": [0.1])"), "time_step_limit");
    expect_load_error(nemotron_h(R"(, "time_step_limit": [0.1, 0.01])"), "0 <= low < high");
    expect_load_error(nemotron_h(R"(, "time_step_limit": [0, "lots"])"), "time_step_limit");
    expect_load_error(nemotron_h(R"(, "ssm_state_size": 0)"), "ssm_state_size");
}

std::string nemotron(const std::string& extra) {
    return R"({"architectures": ["NemotronForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96,
        "vocab_size": 256, "max_position_embeddings": 512, "hidden_act": "relu2", "norm_eps": 1e-5)" +
           extra + "}";
}

TEST(NemotronConfig, LayerNorm1PSquaredReluAndHalfTheHeadTurned) {
    const ModelConfig c = parse_model_config(nemotron(""), "DIR/config.json");
    EXPECT_EQ(c.family, Family::nemotron);
    EXPECT_EQ(c.norm, NormKind::layer_norm_1p);
    EXPECT_EQ(c.mlp, MlpKind::relu2);
    EXPECT_EQ(c.rope_dim(), 8);  // partial_rotary_factor defaults to 0.5
    EXPECT_FALSE(c.recurrent());
    EXPECT_EQ(c.layer_kind(1), LayerKind::decoder);
    EXPECT_EQ(parse_model_config(nemotron(R"(, "partial_rotary_factor": 1.0)"), "DIR/config.json").rope_dim(), 16);
    EXPECT_TRUE(
        parse_model_config(nemotron(R"(, "mlp_bias": true, "attention_bias": true)"), "DIR/config.json").mlp_bias);
}

TEST(NemotronConfig, WhatCannotRunIsRefusedByName) {
    expect_load_error(nemotron(R"(, "partial_rotary_factor": 0.03)"), "partial_rotary_factor");
    expect_load_error(nemotron(R"(, "partial_rotary_factor": 1.5)"), "partial_rotary_factor");
    expect_load_error(R"({"architectures": ["NemotronForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 256, "max_position_embeddings": 512,
        "hidden_act": "silu"})",
                      "hidden_act \"silu\" is not supported for NemotronForCausalLM");
}

TEST(QuoteNonfiniteNumbers, QuotesBareWordsOutsideStringsOnly) {
    EXPECT_EQ(quote_nonfinite_numbers(R"({"a": [Infinity, -Infinity, NaN], "b": "Infinity NaN", "c": "x\"Infinity"})"),
              R"({"a": ["Infinity", "-Infinity", "NaN"], "b": "Infinity NaN", "c": "x\"Infinity"})");
}

}  // namespace
}  // namespace tf::model
