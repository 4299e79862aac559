// config.json and generation_config.json: each supported architecture's
// switches, both RoPE spellings, llama3 scaling, EOS ids as int or list, and
// a clear LoadError naming the file and field for everything else.
#include <gtest/gtest.h>

#include "model/load_error.h"
#include "model/model_config.h"
#include "test_support.h"

namespace tf::model {
namespace {

std::string config_text(const std::string& arch, const std::string& extra = "") {
    return R"({"architectures": [")" + arch + R"("], "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 256,
        "max_position_embeddings": 512)" + extra + "}";
}

using testing::expect_load_error;

TEST(ModelConfig, TinycodeIsQwen3WithQkNormTiedAndTwoEosIdsFromGenerationConfig) {
    ModelConfig c = load_model_config(testing::tinycode_dir());
    EXPECT_EQ(c.architecture, "Qwen3ForCausalLM");
    EXPECT_EQ(c.family, Family::qwen3);
    EXPECT_TRUE(c.qk_norm);
    EXPECT_TRUE(c.tie_word_embeddings);
    EXPECT_FALSE(c.qkv_bias);
    EXPECT_EQ(c.hidden_size, 384);
    EXPECT_EQ(c.num_layers, 8);
    EXPECT_EQ(c.num_heads, 6);
    EXPECT_EQ(c.num_kv_heads, 2);
    EXPECT_EQ(c.head_dim, 64);
    EXPECT_EQ(c.intermediate_size, 1024);
    EXPECT_EQ(c.vocab_size, 8192);
    EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
    EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-6f);
    EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{8189, 8191}));
}

TEST(ModelConfig, Qwen2HasQkvBiasButNoOutputBias) {
    ModelConfig c = parse_model_config(config_text("Qwen2ForCausalLM"), "c");
    EXPECT_TRUE(c.qkv_bias);
    EXPECT_FALSE(c.o_bias);
    EXPECT_FALSE(c.qk_norm);
    EXPECT_EQ(c.head_dim, 16);  // hidden / heads when head_dim is absent
}

TEST(ModelConfig, LlamaAttentionBiasPutsBiasOnAllFourProjections) {
    ModelConfig c = parse_model_config(config_text("LlamaForCausalLM", R"(, "attention_bias": true)"), "c");
    EXPECT_TRUE(c.qkv_bias);
    EXPECT_TRUE(c.o_bias);
    EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(ModelConfig, MistralReadsItsSlidingWindow) {
    ModelConfig c = parse_model_config(config_text("MistralForCausalLM", R"(, "sliding_window": 4096)"), "c");
    EXPECT_EQ(c.family, Family::mistral);
    EXPECT_EQ(c.sliding_window, 4096);
    EXPECT_EQ(parse_model_config(config_text("MistralForCausalLM", R"(, "sliding_window": null)"), "c").sliding_window, 0);
}

TEST(ModelConfig, RopeThetaComesFromTopLevelOrRopeParameters) {
    EXPECT_DOUBLE_EQ(parse_model_config(config_text("LlamaForCausalLM", R"(, "rope_theta": 500000.0)"), "c").rope_theta, 5e5);
    ModelConfig c = parse_model_config(
        config_text("LlamaForCausalLM", R"(, "rope_parameters": {"rope_type": "default", "rope_theta": 250000.0})"), "c");
    EXPECT_DOUBLE_EQ(c.rope_theta, 2.5e5);
    EXPECT_FALSE(c.rope_scaling.enabled);
    EXPECT_DOUBLE_EQ(parse_model_config(config_text("LlamaForCausalLM"), "c").rope_theta, 10000.0);
}

TEST(ModelConfig, Llama3RopeScalingIsReadFromEitherSpelling) {
    const std::string scaling = R"({"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 8192)";
    ModelConfig a = parse_model_config(config_text("LlamaForCausalLM", R"(, "rope_scaling": )" + scaling + "}"), "c");
    ModelConfig b = parse_model_config(
        config_text("LlamaForCausalLM", R"(, "rope_parameters": )" + scaling + R"(, "rope_theta": 500000.0})"), "c");
    for (const ModelConfig& c : {a, b}) {
        EXPECT_TRUE(c.rope_scaling.enabled);
        EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 32.0);
        EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
    }
    EXPECT_DOUBLE_EQ(b.rope_theta, 5e5);
}

TEST(ModelConfig, EosIdsAreAnIntOrAListAndGenerationConfigWins) {
    EXPECT_EQ(parse_model_config(config_text("LlamaForCausalLM", R"(, "eos_token_id": 7)"), "c").eos_token_ids,
              std::vector<int32_t>{7});
    ModelConfig c = parse_model_config(config_text("LlamaForCausalLM", R"(, "eos_token_id": 7)"), "c",
                                       R"({"eos_token_id": [3, 9]})", "g");
    EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{3, 9}));
    ModelConfig d = parse_model_config(config_text("LlamaForCausalLM", R"(, "eos_token_id": [1, 2])"), "c",
                                       R"({"do_sample": false})", "g");
    EXPECT_EQ(d.eos_token_ids, (std::vector<int32_t>{1, 2}));
}

TEST(ModelConfig, Qwen3MoeReadsItsExpertsAndWhichLayersHaveThem) {
    const std::string moe = R"(, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32)";
    std::string text = config_text("Qwen3MoeForCausalLM", moe + R"(, "num_hidden_layers": 6, "decoder_sparse_step": 2,
        "mlp_only_layers": [3], "norm_topk_prob": true)");
    text.replace(text.find(R"("num_hidden_layers": 2,)"), 23, "");
    ModelConfig c = parse_model_config(text, "config.json");
    EXPECT_EQ(c.family, Family::qwen3);
    EXPECT_TRUE(c.qk_norm);
    EXPECT_EQ(c.moe.num_experts, 8);
    EXPECT_EQ(c.moe.experts_per_token, 2);
    EXPECT_EQ(c.moe.expert_intermediate, 32);
    EXPECT_TRUE(c.moe.norm_topk_prob);
    EXPECT_EQ(c.moe.router, RouterKind::softmax);
    // (i + 1) % 2 == 0 gives layers 1, 3, 5; mlp_only_layers takes 3 back.
    for (int32_t i = 0; i < 6; ++i) EXPECT_EQ(c.has_experts(i), i == 1 || i == 5) << i;
    EXPECT_EQ(c.expert_layer_count(), 2);
    // transformers' default: no renormalization of the chosen weights.
    EXPECT_FALSE(parse_model_config(config_text("Qwen3MoeForCausalLM", moe), "config.json").moe.norm_topk_prob);
    EXPECT_FALSE(parse_model_config(config_text("Qwen3ForCausalLM"), "config.json").moe.enabled());

    // transformers' defaults where a config leaves the expert fields out.
    const ModelConfig defaults = parse_model_config(config_text("Qwen3MoeForCausalLM"), "config.json");
    EXPECT_EQ(defaults.moe.num_experts, 128);
    EXPECT_EQ(defaults.moe.experts_per_token, 8);
    EXPECT_EQ(defaults.moe.expert_intermediate, 768);
    expect_load_error(config_text("Qwen3MoeForCausalLM", R"(, "num_experts": 0)"), "\"num_experts\" must be positive");
    expect_load_error(config_text("Qwen3MoeForCausalLM", R"(, "num_experts": 4, "num_experts_per_tok": 5, "moe_intermediate_size": 32)"),
                      "num_experts_per_tok 5 is more than num_experts 4");
    expect_load_error(config_text("Qwen3MoeForCausalLM", moe + R"(, "mlp_only_layers": [7])"), "mlp_only_layers names layer 7 of 2");
    expect_load_error(config_text("Qwen3MoeForCausalLM", R"(, "num_experts": 2048, "num_experts_per_tok": 8, "moe_intermediate_size": 32)"),
                      "at most 1024 experts");
}

TEST(ModelConfig, UnknownArchitectureIsRefusedByName) {
    expect_load_error(config_text("GPT2LMHeadModel"), "architecture \"GPT2LMHeadModel\" is not supported");
}

TEST(ModelConfig, MissingOrMistypedFieldsAreNamed) {
    expect_load_error(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64})", "\"num_hidden_layers\" is missing");
    expect_load_error(config_text("LlamaForCausalLM", R"(, "rope_theta": "big")"), "\"rope_theta\" must be a number");
    expect_load_error(R"({"hidden_size": 64})", "\"architectures\"");
    expect_load_error("{not json", "not valid JSON");
}

TEST(ModelConfig, UnsupportedOptionsAreRefused) {
    expect_load_error(config_text("LlamaForCausalLM", R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0})"),
                      "rope_type \"yarn\" is not supported");
    expect_load_error(config_text("LlamaForCausalLM", R"(, "hidden_act": "gelu")"), "hidden_act \"gelu\"");
    expect_load_error(config_text("Qwen2ForCausalLM", R"(, "use_sliding_window": true)"), "use_sliding_window");
    expect_load_error(config_text("LlamaForCausalLM", R"(, "num_key_value_heads": 3)"), "not a multiple");
    expect_load_error(config_text("LlamaForCausalLM", R"(, "eos_token_id": 999)"), "outside the vocabulary");
}

TEST(ModelConfig, MissingDirectoryNamesConfigJson) {
    try {
        load_model_config("/nonexistent/model");
        FAIL();
    } catch (const LoadError& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/model/config.json"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace tf::model
