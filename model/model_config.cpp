#include "model/model_config.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <limits>
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

}  // namespace

std::string quote_nonfinite_numbers(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (in_string) {
            out += ch;
            if (ch == '\\' && i + 1 < text.size()) {
                out += text[++i];
            } else if (ch == '"') {
                in_string = false;
            }
            continue;
        }
        if (ch == '"') in_string = true;
        bool replaced = false;
        for (const char* word : {"-Infinity", "Infinity", "NaN"}) {
            const size_t n = std::char_traits<char>::length(word);
            if (text.compare(i, n, word) == 0) {
                out += '"';
                out += word;
                out += '"';
                i += n - 1;
                replaced = true;
                break;
            }
        }
        if (!replaced) out += ch;
    }
    return out;
}

namespace {

json parse_json(const std::string& text, const std::string& where) {
    try {
        json parsed = json::parse(quote_nonfinite_numbers(text));
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

void read_decoder(const json& root, const std::string& where, ModelConfig& c) {
    Fields f{root, where};

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

    const std::string act = f.string_or("hidden_act", c.family == Family::nemotron ? "relu2" : "silu");
    if (c.family == Family::nemotron) {
        // Nemotron-4 / Minitron: LayerNorm1P (norm_eps), squared ReLU, RoPE on
        // the first partial_rotary_factor of each head.
        if (act != "relu2")
            throw LoadError(where + ": hidden_act \"" + act +
                            "\" is not supported for NemotronForCausalLM (supported: relu2)");
        c.norm = NormKind::layer_norm_1p;
        c.mlp = MlpKind::relu2;
        c.mlp_bias = f.boolean_or("mlp_bias", false);
        c.rms_norm_eps = static_cast<float>(f.number_or("norm_eps", 1e-5));
        const double factor = f.number_or("partial_rotary_factor", 0.5);
        const auto dim = static_cast<int32_t>(factor * c.head_dim);
        if (!(factor > 0 && factor <= 1) || dim < 2 || dim % 2 != 0) {
            throw LoadError(where + ": partial_rotary_factor " + std::to_string(factor) + " of head_dim " +
                            std::to_string(c.head_dim) + " must turn an even number of dimensions (at least 2)");
        }
        c.rotary_dim = dim == c.head_dim ? 0 : dim;
    } else {
        if (act != "silu") throw LoadError(where + ": hidden_act \"" + act + "\" is not supported (supported: silu)");
        if (f.boolean_or("mlp_bias", false)) throw LoadError(where + ": mlp_bias true is not supported");
    }

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
}

// Qwen3MoeForCausalLM, read as transformers' configuration_qwen3_moe.py
// (its defaults for absent fields):
// layer i's MLP is the experts unless i is in mlp_only_layers or
// (i + 1) % decoder_sparse_step != 0; norm_topk_prob defaults to false as
// the class does (the released checkpoints write true).
void read_qwen3_moe(const json& root, const std::string& where, ModelConfig& c) {
    Fields f{root, where};
    MoeConfig& m = c.moe;
    m.router = RouterKind::softmax;
    // transformers' defaults for the fields a config may leave out.
    m.num_experts = f.integer_or("num_experts", 128);
    m.experts_per_token = f.integer_or("num_experts_per_tok", 8);
    m.expert_intermediate = f.integer_or("moe_intermediate_size", 768);
    require_positive(m.num_experts, "num_experts", where);
    require_positive(m.experts_per_token, "num_experts_per_tok", where);
    require_positive(m.expert_intermediate, "moe_intermediate_size", where);
    if (m.experts_per_token > m.num_experts) {
        throw LoadError(where + ": num_experts_per_tok " + std::to_string(m.experts_per_token) +
                        " is more than num_experts " + std::to_string(m.num_experts));
    }
    // The router keeps its scores on the stack (cpu/moe_router.cpp).
    if (m.num_experts > 1024 || m.experts_per_token > 256) {
        throw LoadError(where + ": num_experts " + std::to_string(m.num_experts) + " with num_experts_per_tok " +
                        std::to_string(m.experts_per_token) + " is not supported (at most 1024 experts and 256 a token)");
    }
    m.norm_topk_prob = f.boolean_or("norm_topk_prob", false);
    const int32_t step = f.integer_or("decoder_sparse_step", 1);
    require_positive(step, "decoder_sparse_step", where);
    c.sparse_layers.assign(static_cast<size_t>(c.num_layers), false);
    for (int32_t i = 0; i < c.num_layers; ++i) c.sparse_layers[i] = (i + 1) % step == 0;
    if (f.has("mlp_only_layers")) {
        const json& dense = root.at("mlp_only_layers");
        if (!dense.is_array()) throw LoadError(where + ": field \"mlp_only_layers\" must be a list of layer indices, got " + dense.dump());
        for (const json& entry : dense) {
            const int32_t layer = f.integer_of(entry, "mlp_only_layers");
            if (layer < 0 || layer >= c.num_layers) {
                throw LoadError(where + ": mlp_only_layers names layer " + std::to_string(layer) + " of " +
                                std::to_string(c.num_layers));
            }
            c.sparse_layers[layer] = false;
        }
    }
}

void read_eos_ids(const json& root, const std::string& where, const std::string& generation_config_json,
                  const std::string& generation_where, ModelConfig& c) {
    Fields f{root, where};
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
}

// A number that may be written as a string ("Infinity", "inf", "-Infinity")
// or as transformers 5's {"__float__": "Infinity"}.
double number_or_nonfinite(const json& v, const std::string& where, const char* name) {
    if (v.is_number()) return v.get<double>();
    const json* text = &v;
    if (v.is_object() && v.contains("__float__")) text = &v.at("__float__");
    if (text->is_string()) {
        const std::string s = text->get<std::string>();
        if (s == "Infinity" || s == "inf" || s == "+inf") return std::numeric_limits<double>::infinity();
        if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    throw LoadError(where + ": field \"" + name + "\" must hold numbers, got " + v.dump());
}

// hybrid_override_pattern ("M-M*-") or layers_block_type (["mamba", "mlp",
// ...], or transformers 5's "linear_attention" / "full_attention").
std::vector<LayerKind> read_layer_kinds(const json& root, const std::string& where) {
    std::vector<LayerKind> kinds;
    Fields f{root, where};
    if (f.has("hybrid_override_pattern")) {
        const std::string pattern = f.string_or("hybrid_override_pattern", "");
        for (size_t i = 0; i < pattern.size(); ++i) {
            switch (pattern[i]) {
                case 'M': kinds.push_back(LayerKind::mamba); break;
                case '*': kinds.push_back(LayerKind::attention); break;
                case '-': kinds.push_back(LayerKind::mlp); break;
                case 'E': kinds.push_back(LayerKind::moe); break;
                default:
                    throw LoadError(where + ": hybrid_override_pattern \"" + pattern + "\" has '" +
                                    std::string(1, pattern[i]) + "' at layer " + std::to_string(i) +
                                    " (known: M Mamba2, * attention, - MLP, E mixture of experts)");
            }
        }
    } else if (f.has("layers_block_type") && root.at("layers_block_type").is_array()) {
        const json& list = root.at("layers_block_type");
        for (size_t i = 0; i < list.size(); ++i) {
            const std::string type = list[i].is_string() ? list[i].get<std::string>() : list[i].dump();
            if (type == "mamba" || type == "linear_attention") {
                kinds.push_back(LayerKind::mamba);
            } else if (type == "attention" || type == "full_attention") {
                kinds.push_back(LayerKind::attention);
            } else if (type == "mlp") {
                kinds.push_back(LayerKind::mlp);
            } else if (type == "moe") {
                kinds.push_back(LayerKind::moe);
            } else {
                throw LoadError(where + ": layers_block_type[" + std::to_string(i) + "] \"" + type +
                                "\" is not a layer kind (known: mamba, attention, mlp, moe)");
            }
        }
    } else {
        throw LoadError(where +
                        ": NemotronHForCausalLM needs \"hybrid_override_pattern\" or a \"layers_block_type\" list");
    }
    if (kinds.empty()) throw LoadError(where + ": the model has no layers (empty hybrid_override_pattern)");
    return kinds;
}

// NemotronH's `E` layers (Nemotron 3), with transformers' defaults: a
// sigmoid router choosing in groups, relu^2 experts without a gate, one
// shared expert, and optionally a latent width the routed experts work in.
void read_nemotron_h_experts(const json& root, const std::string& where, ModelConfig& c) {
    Fields f{root, where};
    MoeConfig& m = c.moe;
    m.router = RouterKind::sigmoid;
    m.num_experts = f.integer_or("n_routed_experts", f.integer_or("num_local_experts", 8));
    m.experts_per_token = f.integer_or("num_experts_per_tok", 2);
    m.expert_intermediate = f.integer_or("moe_intermediate_size", 7688);
    m.shared_expert_intermediate = f.integer_or("moe_shared_expert_intermediate_size", 7688);
    m.groups = f.integer_or("n_group", 1);
    m.top_groups = f.integer_or("topk_group", 1);
    m.norm_topk_prob = f.boolean_or("norm_topk_prob", true);
    m.routed_scaling_factor = static_cast<float>(f.number_or("routed_scaling_factor", 1.0));
    m.latent_size = f.integer_or("moe_latent_size", 0);
    for (auto [value, name] : {std::pair{m.num_experts, "n_routed_experts"},
                               {m.experts_per_token, "num_experts_per_tok"},
                               {m.expert_intermediate, "moe_intermediate_size"},
                               {m.shared_expert_intermediate, "moe_shared_expert_intermediate_size"},
                               {m.groups, "n_group"},
                               {m.top_groups, "topk_group"}}) {
        require_positive(value, name, where);
    }
    if (m.latent_size < 0) throw LoadError(where + ": field \"moe_latent_size\" must not be negative");
    // n_shared_experts is not read: transformers builds one shared expert of
    // moe_shared_expert_intermediate_size whatever it says, and the
    // checkpoint's tensors are that one.
    if (m.num_experts > 1024 || m.experts_per_token > 256 || m.groups > 256) {
        throw LoadError(where + ": " + std::to_string(m.num_experts) + " experts, " + std::to_string(m.experts_per_token) +
                        " a token in " + std::to_string(m.groups) +
                        " groups is not supported (at most 1024 experts, 256 a token, 256 groups)");
    }
    if (m.num_experts % m.groups != 0 || m.top_groups > m.groups ||
        m.experts_per_token > m.top_groups * (m.num_experts / m.groups)) {
        throw LoadError(where + ": num_experts_per_tok " + std::to_string(m.experts_per_token) + " from topk_group " +
                        std::to_string(m.top_groups) + " of n_group " + std::to_string(m.groups) + " over " +
                        std::to_string(m.num_experts) + " experts: the groups must split the experts evenly and "
                        "hold enough of them");
    }
    if (f.boolean_or("mlp_bias", false)) throw LoadError(where + ": mlp_bias true is not supported with experts");
}

// NemotronHForCausalLM, read as transformers' configuration_nemotron_h.py
// reads it, older spellings (mamba_n_groups, mamba_d_conv, ...) included.
void read_nemotron_h(const json& root, const std::string& where, ModelConfig& c) {
    Fields f{root, where};
    c.norm = NormKind::rms;
    c.mlp = MlpKind::relu2;
    c.rotary = false;
    c.layer_kinds = read_layer_kinds(root, where);
    c.num_layers = static_cast<int32_t>(c.layer_kinds.size());
    bool any_attention = false, any_mlp = false, any_moe = false;
    for (LayerKind kind : c.layer_kinds) {
        any_attention |= kind == LayerKind::attention;
        any_mlp |= kind == LayerKind::mlp;
        any_moe |= kind == LayerKind::moe;
    }

    c.hidden_size = f.integer("hidden_size");
    c.vocab_size = f.integer("vocab_size");
    c.max_position_embeddings = f.integer_or("max_position_embeddings", 4096);
    c.num_heads = f.integer_or("num_attention_heads", 32);
    c.num_kv_heads = f.integer_or("num_key_value_heads", c.num_heads);
    c.head_dim = f.integer_or("head_dim", f.integer_or("attention_head_dim", 128));
    c.intermediate_size = f.integer_or("intermediate_size", any_mlp ? 0 : 1);
    for (auto [value, name] : {std::pair{c.hidden_size, "hidden_size"},
                               {c.vocab_size, "vocab_size"},
                               {c.max_position_embeddings, "max_position_embeddings"},
                               {c.num_heads, "num_attention_heads"},
                               {c.num_kv_heads, "num_key_value_heads"},
                               {c.head_dim, "head_dim"},
                               {c.intermediate_size, "intermediate_size"}}) {
        require_positive(value, name, where);
    }
    if (any_attention && c.num_heads % c.num_kv_heads != 0) {
        throw LoadError(where + ": num_attention_heads " + std::to_string(c.num_heads) +
                        " is not a multiple of num_key_value_heads " + std::to_string(c.num_kv_heads));
    }
    c.rms_norm_eps = static_cast<float>(f.number_or("layer_norm_epsilon", 1e-5));
    c.tie_word_embeddings = f.boolean_or("tie_word_embeddings", false);
    c.torch_dtype = f.string_or("torch_dtype", f.string_or("dtype", ""));
    c.qkv_bias = c.o_bias = f.boolean_or("attention_bias", false);
    c.mlp_bias = f.boolean_or("mlp_bias", false);
    if (f.has("sliding_window")) throw LoadError(where + ": sliding_window is not supported for NemotronHForCausalLM");
    const std::string mlp_act = f.string_or("mlp_hidden_act", "relu2");
    if (mlp_act != "relu2")
        throw LoadError(where + ": mlp_hidden_act \"" + mlp_act + "\" is not supported (supported: relu2)");

    if (any_moe) read_nemotron_h_experts(root, where, c);

    MambaConfig& m = c.mamba;
    m.num_heads = f.integer_or("mamba_num_heads", 128);
    m.head_dim = f.integer_or("mamba_head_dim", 64);
    m.state_size = f.integer_or("ssm_state_size", 128);
    m.groups = f.integer_or("n_groups", f.integer_or("mamba_n_groups", 8));
    m.conv_kernel = f.integer_or("conv_kernel", f.integer_or("mamba_d_conv", 4));
    m.conv_bias = f.boolean_or("use_conv_bias", f.boolean_or("mamba_conv_bias", true));
    m.proj_bias = f.boolean_or("use_bias", false);
    for (auto [value, name] : {std::pair{m.num_heads, "mamba_num_heads"},
                               {m.head_dim, "mamba_head_dim"},
                               {m.state_size, "ssm_state_size"},
                               {m.groups, "n_groups"},
                               {m.conv_kernel, "conv_kernel"}}) {
        require_positive(value, name, where);
    }
    if (m.num_heads % m.groups != 0) {
        throw LoadError(where + ": mamba_num_heads " + std::to_string(m.num_heads) + " is not a multiple of n_groups " +
                        std::to_string(m.groups));
    }
    const std::string mamba_act = f.string_or("mamba_hidden_act", "silu");
    if (mamba_act != "silu")
        throw LoadError(where + ": mamba_hidden_act \"" + mamba_act + "\" is not supported (supported: silu)");
    const char* limit_key = f.has("time_step_limit")  ? "time_step_limit"
                            : f.has("mamba_dt_limit") ? "mamba_dt_limit"
                                                      : nullptr;
    if (limit_key) {
        const json& limit = root.at(limit_key);
        if (!limit.is_array() || limit.size() != 2) {
            throw LoadError(where + ": field \"" + limit_key + "\" must be [low, high], got " + limit.dump());
        }
        const double low = number_or_nonfinite(limit[0], where, limit_key);
        const double high = number_or_nonfinite(limit[1], where, limit_key);
        if (!(low >= 0) || !(high > low)) {
            throw LoadError(where + ": field \"" + limit_key + "\" must be [low, high] with 0 <= low < high, got " +
                            limit.dump());
        }
        m.dt_min = static_cast<float>(low);
        m.dt_max = static_cast<float>(high);
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
        throw LoadError(where +
                        ": field \"architectures\" must be a list naming the model class, e.g. "
                        "[\"LlamaForCausalLM\"]");
    }
    c.architecture = root.at("architectures")[0].get<std::string>();
    if (c.architecture == "LlamaForCausalLM") {
        c.family = Family::llama;
    } else if (c.architecture == "MistralForCausalLM") {
        c.family = Family::mistral;
    } else if (c.architecture == "Qwen2ForCausalLM") {
        c.family = Family::qwen2;
    } else if (c.architecture == "Qwen3ForCausalLM" || c.architecture == "Qwen3MoeForCausalLM") {
        c.family = Family::qwen3;
    } else if (c.architecture == "NemotronForCausalLM") {
        c.family = Family::nemotron;
    } else if (c.architecture == "NemotronHForCausalLM") {
        c.family = Family::nemotron_h;
    } else {
        throw LoadError(where + ": architecture \"" + c.architecture +
                        "\" is not supported (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
                        "Qwen3ForCausalLM, Qwen3MoeForCausalLM, NemotronForCausalLM, NemotronHForCausalLM)");
    }
    if (c.family == Family::nemotron_h) {
        read_nemotron_h(root, where, c);
    } else {
        read_decoder(root, where, c);
        if (c.architecture == "Qwen3MoeForCausalLM") read_qwen3_moe(root, where, c);
    }
    read_eos_ids(root, where, generation_config_json, generation_where, c);
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
