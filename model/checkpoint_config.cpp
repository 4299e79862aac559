#include "model/checkpoint_config.h"

#include <nlohmann/json.hpp>

namespace tf::model {

using nlohmann::json;

bool is_nemotron_h(const CheckpointSpec& s) { return s.architecture == "NemotronHForCausalLM"; }
bool is_nemotron(const CheckpointSpec& s) { return s.architecture == "NemotronForCausalLM"; }
bool is_qwen3_moe(const CheckpointSpec& s) { return s.architecture == "Qwen3MoeForCausalLM"; }

MambaDims mamba_dims(const CheckpointSpec& s) {
    const int64_t inner = int64_t{s.mamba_heads} * s.mamba_head_dim;
    const int64_t groups_state = int64_t{s.mamba_groups} * s.ssm_state_size;
    const int64_t conv = inner + 2 * groups_state;
    return {inner, groups_state, conv, inner + conv + s.mamba_heads};
}

namespace {

const char* torch_dtype(const CheckpointSpec& s) {
    return s.dtype == DType::bf16 ? "bfloat16" : s.dtype == DType::f16 ? "float16" : "float32";
}

// The fields every family's config.json spells the same way.
json common_config(const CheckpointSpec& s, const char* model_type, size_t layers) {
    json c;
    c["architectures"] = {s.architecture};
    c["model_type"] = model_type;
    c["vocab_size"] = s.vocab_size;
    c["hidden_size"] = s.hidden_size;
    c["num_hidden_layers"] = layers;
    c["num_attention_heads"] = s.num_heads;
    c["num_key_value_heads"] = s.num_kv_heads;
    c["head_dim"] = s.head_dim;
    c["intermediate_size"] = s.intermediate_size;
    c["max_position_embeddings"] = s.max_position_embeddings;
    c["tie_word_embeddings"] = s.tie_word_embeddings;
    c["torch_dtype"] = torch_dtype(s);
    if (!s.eos_token_ids.empty()) c["eos_token_id"] = s.eos_token_ids.front();
    return c;
}


// The fields transformers' NemotronHConfig reads. time_step_limit stays
// unwritten: its default, (0, inf), clamps nothing.
json nemotron_h_config(const CheckpointSpec& s) {
    json c = common_config(s, "nemotron_h", s.hybrid_pattern.size());
    c["hybrid_override_pattern"] = s.hybrid_pattern;
    c["mamba_num_heads"] = s.mamba_heads;
    c["mamba_head_dim"] = s.mamba_head_dim;
    c["ssm_state_size"] = s.ssm_state_size;
    c["n_groups"] = s.mamba_groups;
    c["conv_kernel"] = s.conv_kernel;
    c["use_conv_bias"] = true;
    c["use_bias"] = false;
    c["mlp_bias"] = false;
    c["attention_bias"] = false;
    c["mamba_hidden_act"] = "silu";
    c["mlp_hidden_act"] = "relu2";
    c["layer_norm_epsilon"] = 1e-5;
    c["time_step_min"] = 0.001;
    c["time_step_max"] = 0.1;
    c["chunk_size"] = 128;
    c["residual_in_fp32"] = false;
    // Only a pattern with E layers carries the MoE fields: llama.cpp's
    // converter takes num_experts_per_tok as the sign of nemotron_h_moe.
    if (s.hybrid_pattern.find('E') != std::string::npos) {
        c["n_routed_experts"] = s.num_experts;
        c["num_experts_per_tok"] = s.experts_per_token;
        c["moe_intermediate_size"] = s.expert_intermediate;
        c["moe_shared_expert_intermediate_size"] = s.shared_expert_intermediate;
        c["n_shared_experts"] = 1;
        c["n_group"] = s.expert_groups;
        c["topk_group"] = s.top_groups;
        c["norm_topk_prob"] = s.norm_topk_prob;
        c["routed_scaling_factor"] = s.routed_scaling_factor;
        c["moe_latent_size"] = s.moe_latent_size > 0 ? json(s.moe_latent_size) : json(nullptr);
    }
    return c;
}

// Nemotron-4 / Minitron (transformers' NemotronConfig).
json nemotron_config(const CheckpointSpec& s) {
    json c = common_config(s, "nemotron", static_cast<size_t>(s.num_layers));
    c["norm_eps"] = 1e-5;
    c["hidden_act"] = "relu2";
    c["partial_rotary_factor"] = s.partial_rotary_factor;
    c["rope_theta"] = s.rope_theta;
    c["attention_bias"] = s.attention_bias;
    c["mlp_bias"] = false;
    return c;
}

json config_json(const CheckpointSpec& s) {
    if (is_nemotron_h(s)) return nemotron_h_config(s);
    if (is_nemotron(s)) return nemotron_config(s);
    const char* model_type = s.architecture == "Qwen3ForCausalLM"     ? "qwen3"
                             : is_qwen3_moe(s)                        ? "qwen3_moe"
                             : s.architecture == "Qwen2ForCausalLM"   ? "qwen2"
                             : s.architecture == "MistralForCausalLM" ? "mistral"
                                                                      : "llama";
    json c = common_config(s, model_type, static_cast<size_t>(s.num_layers));
    c["rms_norm_eps"] = 1e-6;
    c["hidden_act"] = "silu";
    if (s.architecture != "Qwen2ForCausalLM" && s.architecture != "MistralForCausalLM") {
        c["attention_bias"] = s.attention_bias;
    }
    if (s.architecture == "MistralForCausalLM") {
        c["sliding_window"] = s.sliding_window > 0 ? json(s.sliding_window) : json(nullptr);
    } else if (s.architecture != "LlamaForCausalLM") {
        c["use_sliding_window"] = false;
    }
    json scaling = nullptr;
    if (s.llama3_rope_scaling) {
        scaling = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                   {"original_max_position_embeddings", 8192}};
    }
    if (s.rope_parameters) {
        json p = scaling.is_null() ? json{{"rope_type", "default"}} : scaling;
        p["rope_theta"] = s.rope_theta;
        c["rope_parameters"] = p;
    } else {
        c["rope_theta"] = s.rope_theta;
        c["rope_scaling"] = scaling;
    }
    if (is_qwen3_moe(s)) {
        // transformers' Qwen3MoeConfig field names; intermediate_size above
        // stays the width of the dense layers.
        c["num_experts"] = s.num_experts;
        c["num_experts_per_tok"] = s.experts_per_token;
        c["moe_intermediate_size"] = s.expert_intermediate;
        c["norm_topk_prob"] = s.norm_topk_prob;
        c["decoder_sparse_step"] = s.decoder_sparse_step;
        c["mlp_only_layers"] = s.mlp_only_layers;
        c["router_aux_loss_coef"] = 0.001;  // training only; written as the released configs do
    }
    return c;
}

}  // namespace

std::string config_json_text(const CheckpointSpec& s) { return config_json(s).dump(2) + "\n"; }

}  // namespace tf::model
