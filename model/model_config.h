// ModelConfig: the architecture description read from a Hugging Face
// directory's config.json and generation_config.json. Plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tf::model {

// The transformer families the loader knows. They differ only in the few
// switches below; everything else is the Llama decoder layer.
enum class Family { llama, mistral, qwen2, qwen3 };

// rope_scaling / rope_parameters "rope_type": "llama3" (Llama 3.1+).
struct Llama3RopeScaling {
    bool enabled = false;
    double factor = 8.0;
    double low_freq_factor = 1.0;
    double high_freq_factor = 4.0;
    int32_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
    std::string architecture;  // e.g. "Qwen3ForCausalLM"
    int32_t vocab_size = 0;
    int32_t max_position_embeddings = 0;
    std::vector<int32_t> eos_token_ids;  // generation_config.json, else config.json

    Family family = Family::llama;
    int32_t hidden_size = 0;
    int32_t num_layers = 0;
    int32_t num_heads = 0;
    int32_t num_kv_heads = 0;          // GQA: num_heads is a multiple of it
    int32_t head_dim = 0;              // config "head_dim", else hidden_size / num_heads
    int32_t intermediate_size = 0;
    float rms_norm_eps = 1e-6f;
    double rope_theta = 10000.0;       // top-level "rope_theta" or rope_parameters.rope_theta
    Llama3RopeScaling rope_scaling;
    bool tie_word_embeddings = false;  // lm_head shares model.embed_tokens.weight
    bool qkv_bias = false;             // Qwen2, or Llama "attention_bias"
    bool o_bias = false;               // Llama "attention_bias" only
    bool qk_norm = false;              // Qwen3: RMSNorm over each head of q and k before RoPE
    int32_t sliding_window = 0;        // Mistral: attend to the last `sliding_window` positions; 0 = all
    std::string torch_dtype;           // as written; informational (weights keep their stored dtype)
};

// Reads DIR/config.json and, when present, DIR/generation_config.json.
// Throws LoadError naming the file and field for an unknown architecture, a
// missing or mistyped field, or an unsupported option.
ModelConfig load_model_config(const std::string& dir);

// The same from JSON text already in memory; `where` names the file in errors.
ModelConfig parse_model_config(const std::string& config_json, const std::string& where,
                               const std::string& generation_config_json = "",
                               const std::string& generation_where = "");

}  // namespace tf::model
