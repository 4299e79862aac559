#include "model/model_config.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/load_error.h"

namespace tf::model {

namespace {

using nlohmann::json;

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw LoadError(path.string() + ": cannot open (a Hugging Face model directory holds config.json)");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

json parse_json(const std::string& text, const std::string& where) {
    try {
        json parsed = json::parse(text);
        if (!parsed.is_object()) throw LoadError(where + ": expected a JSON object at the top level");
        return parsed;
    } catch (const json::exception& e) {
        throw LoadError(where + ": not valid JSON: " + e.what());
    }
}

// Fields: each getter names the file and the field when it fails.
struct Fields {
    const json& object;
    std::string where;

    bool has(const char* key) const { return object.contains(key) && !object.at(key).is_null(); }

    int32_t integer(const char* key) const {
        if (!has(key)) throw LoadError(where + ": field \"" + key + "\" is missing");
        return integer_of(object.at(key), key);
    }
    int32_t integer_or(const char* key, int32_t fallback) const {
        return has(key) ? integer_of(object.at(key), key) : fallback;
    }
    double number_or(const char* key, double fallback) const {
        if (!has(key)) return fallback;
        const json& v = object.at(key);
        if (!v.is_number()) throw LoadError(where + ": field \"" + key + "\" must be a number, got " + v.dump());
        return v.get<double>();
    }
    bool boolean_or(const char* key, bool fallback) const {
        if (!has(key)) return fallback;
        const json& v = object.at(key);
        if (!v.is_boolean()) throw LoadError(where + ": field \"" + key + "\" must be true or false, got " + v.dump());
        return v.get<bool>();
    }
    std::string string_or(const char* key, const std::string& fallback) const {
        if (!has(key)) return fallback;
        const json& v = object.at(key);
        if (!v.is_string()) throw LoadError(where + ": field \"" + key + "\" must be a string, got " + v.dump());
        return v.get<std::string>();
    }
    int32_t integer_of(const json& v, const char* key) const {
        if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX) {
            throw LoadError(where + ": field \"" + key + "\" must be an integer, got " + v.dump());
        }
        return static_cast<int32_t>(v.get<int64_t>());
    }
    // "eos_token_id": 2 or [2, 7].
    std::vector<int32_t> ids_or_empty(const char* key) const {
        std::vector<int32_t> ids;
        if (!has(key)) return ids;
        const json& v = object.at(key);
        if (v.is_array()) {
            for (const json& id : v) ids.push_back(integer_of(id, key));
        } else {
            ids.push_back(integer_of(v, key));
        }
        return ids;
    }
};

void require_positive(int32_t value, const char* field, const std::string& where) {
    if (value <= 0) throw LoadError(where + ": field \"" + field + "\" must be positive, got " + std::to_string(value));
}

// rope_scaling (transformers <= 4.x) or rope_parameters (5.x) may carry a
// rope type; only "default" and "llama3" change nothing we cannot do.
void read_rope_type(const json& block, const std::string& where, const char* name, ModelConfig& c) {
    if (!block.is_object()) throw LoadError(where + ": field \"" + name + "\" must be an object, got " + block.dump());
    Fields f{block, where};
    std::string type = f.string_or("rope_type", f.string_or("type", "default"));
    if (type == "default") return;
    if (type != "llama3") {
        throw LoadError(where + ": " + name + " rope_type \"" + type +
                        "\" is not supported (supported: default, llama3)");
    }
    c.rope_scaling.enabled = true;
    c.rope_scaling.factor = f.number_or("factor", 8.0);
    c.rope_scaling.low_freq_factor = f.number_or("low_freq_factor", 1.0);
    c.rope_scaling.high_freq_factor = f.number_or("high_freq_factor", 4.0);
    c.rope_scaling.original_max_position_embeddings = f.integer_or("original_max_position_embeddings", 8192);
    if (c.rope_scaling.factor <= 0 || c.rope_scaling.high_freq_factor <= c.rope_scaling.low_freq_factor) {
        throw LoadError(where + ": " + name + " llama3 needs factor > 0 and high_freq_factor > low_freq_factor");
    }
}

}  // namespace

ModelConfig parse_model_config(const std::string& config_json, const std::string& where,
                               const std::string& generation_config_json, const std::string& generation_where) {
    json root = parse_json(config_json, where);
    Fields f{root, where};
    ModelConfig c;

    if (!root.contains("architectures") || !root.at("architectures").is_array() || root.at("architectures").empty() ||
        !root.at("architectures")[0].is_string()) {
        throw LoadError(where + ": field \"architectures\" must be a list naming the model class, e.g. "
                                "[\"LlamaForCausalLM\"]");
    }
    c.architecture = root.at("architectures")[0].get<std::string>();
    if (c.architecture == "LlamaForCausalLM") {
        c.family = Family::llama;
    } else if (c.architecture == "MistralForCausalLM") {
        c.family = Family::mistral;
    } else if (c.architecture == "Qwen2ForCausalLM") {
        c.family = Family::qwen2;
    } else if (c.architecture == "Qwen3ForCausalLM") {
        c.family = Family::qwen3;
    } else {
        throw LoadError(where + ": architecture \"" + c.architecture +
                        "\" is not supported (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
                        "Qwen3ForCausalLM)");
    }

    c.hidden_size = f.integer("hidden_size");
    c.num_layers = f.integer("num_hidden_layers");
    c.num_heads = f.integer("num_attention_heads");
    c.intermediate_size = f.integer("intermediate_size");
    c.vocab_size = f.integer("vocab_size");
    c.max_position_embeddings = f.integer("max_position_embeddings");
    for (auto [value, name] : {std::pair{c.hidden_size, "hidden_size"}, {c.num_layers, "num_hidden_layers"},
                               {c.num_heads, "num_attention_heads"}, {c.intermediate_size, "intermediate_size"},
                               {c.vocab_size, "vocab_size"}, {c.max_position_embeddings, "max_position_embeddings"}}) {
        require_positive(value, name, where);
    }
    c.num_kv_heads = f.integer_or("num_key_value_heads", c.num_heads);
    require_positive(c.num_kv_heads, "num_key_value_heads", where);
    if (c.num_heads % c.num_kv_heads != 0) {
        throw LoadError(where + ": num_attention_heads " + std::to_string(c.num_heads) +
                        " is not a multiple of num_key_value_heads " + std::to_string(c.num_kv_heads));
    }
    if (f.has("head_dim")) {
        c.head_dim = f.integer("head_dim");
    } else {
        if (c.hidden_size % c.num_heads != 0) {
            throw LoadError(where + ": hidden_size is not a multiple of num_attention_heads and no head_dim is given");
        }
        c.head_dim = c.hidden_size / c.num_heads;
    }
    require_positive(c.head_dim, "head_dim", where);
    if (c.head_dim % 2 != 0) throw LoadError(where + ": head_dim must be even for RoPE, got " + std::to_string(c.head_dim));

    c.rms_norm_eps = static_cast<float>(f.number_or("rms_norm_eps", 1e-6));
    c.tie_word_embeddings = f.boolean_or("tie_word_embeddings", false);
    c.torch_dtype = f.string_or("torch_dtype", f.string_or("dtype", ""));

    std::string act = f.string_or("hidden_act", "silu");
    if (act != "silu") throw LoadError(where + ": hidden_act \"" + act + "\" is not supported (supported: silu)");
    if (f.boolean_or("mlp_bias", false)) throw LoadError(where + ": mlp_bias true is not supported");

    // Biases: Qwen2 always has q/k/v bias and no o bias; Llama and Qwen3 put
    // attention_bias on all four; Mistral has none.
    if (c.family == Family::qwen2) {
        c.qkv_bias = true;
    } else if (c.family != Family::mistral) {
        c.qkv_bias = c.o_bias = f.boolean_or("attention_bias", false);
    }
    c.qk_norm = c.family == Family::qwen3;

    if (c.family == Family::mistral) {
        c.sliding_window = f.integer_or("sliding_window", 0);
        if (c.sliding_window < 0) throw LoadError(where + ": sliding_window must not be negative");
    } else if (f.boolean_or("use_sliding_window", false)) {
        throw LoadError(where + ": use_sliding_window true is not supported for " + c.architecture);
    }

    c.rope_theta = 10000.0;
    if (f.has("rope_parameters")) {
        const json& p = root.at("rope_parameters");
        if (p.is_object()) c.rope_theta = Fields{p, where}.number_or("rope_theta", c.rope_theta);
        read_rope_type(p, where, "rope_parameters", c);
    }
    c.rope_theta = f.number_or("rope_theta", c.rope_theta);
    if (f.has("rope_scaling")) read_rope_type(root.at("rope_scaling"), where, "rope_scaling", c);
    if (!(c.rope_theta > 0)) throw LoadError(where + ": rope_theta must be positive");

    c.eos_token_ids = f.ids_or_empty("eos_token_id");
    if (!generation_config_json.empty()) {
        json generation = parse_json(generation_config_json, generation_where);
        std::vector<int32_t> ids = Fields{generation, generation_where}.ids_or_empty("eos_token_id");
        if (!ids.empty()) c.eos_token_ids = ids;
    }
    for (int32_t id : c.eos_token_ids) {
        if (id < 0 || id >= c.vocab_size) {
            throw LoadError(where + ": eos_token_id " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(c.vocab_size));
        }
    }
    return c;
}

ModelConfig load_model_config(const std::string& dir) {
    std::filesystem::path config_path = std::filesystem::path(dir) / "config.json";
    std::filesystem::path generation_path = std::filesystem::path(dir) / "generation_config.json";
    std::string generation;
    if (std::filesystem::exists(generation_path)) generation = read_text(generation_path);
    return parse_model_config(read_text(config_path), config_path.string(), generation, generation_path.string());
}

}  // namespace tf::model
