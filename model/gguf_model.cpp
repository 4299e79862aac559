#include "model/gguf_model.h"

#include <cmath>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <vector>

#include "model/gguf_experts.h"
#include "model/gguf_nemotron.h"
#include "model/load_error.h"
#include "model/rope.h"

namespace tf::model {

namespace {

struct Architecture {
    const char* gguf;
    const char* hf;
    Family family;
};
constexpr Architecture kArchitectures[] = {
    {"llama", "LlamaForCausalLM", Family::llama},
    {"qwen2", "Qwen2ForCausalLM", Family::qwen2},
    {"qwen3", "Qwen3ForCausalLM", Family::qwen3},
    {"qwen3moe", "Qwen3MoeForCausalLM", Family::qwen3},  // Qwen3 with experts (gguf_experts.h)
};

// Control tokens llama.cpp also ends a generation on when the file's
// eos/eot/eom ids do not name them (its end-of-generation heuristic): chat
// models stop on their end-of-turn token whichever id the file calls eos.
constexpr const char* kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>",
    "<｜end▁of▁sentence｜>",
};
constexpr int64_t kControlToken = 3;


// llama.cpp's converter stores Llama 3's RoPE scaling as rope_freqs.weight,
// one divisor per frequency, not as keys. It is accepted when it is exactly
// what Llama 3's rule gives for some factor (the largest divisor) with
// Llama 3's other parameters; anything else is a scaling we cannot run.
void read_llama3_rope_freqs(const GgufFile& f, const std::string& k, const GgufTensor& t, ModelConfig& c) {
    const int32_t half = c.head_dim / 2;
    if (t.type != ggml_type::f32 || t.dims.size() != 1 || t.dims[0] != static_cast<uint64_t>(half)) {
        throw LoadError(f.path() + ": tensor rope_freqs.weight must be F32 of " + std::to_string(half) + " values");
    }
    std::vector<float> divisors(static_cast<size_t>(half));
    std::memcpy(divisors.data(), t.data, divisors.size() * 4);
    Llama3RopeScaling s;
    s.enabled = true;
    s.factor = 1.0;
    for (float d : divisors) s.factor = std::max(s.factor, static_cast<double>(d));
    s.original_max_position_embeddings =
        static_cast<int32_t>(f.optional_unsigned_int(k + "rope.scaling.original_context_length").value_or(8192));
    // The divisors Llama 3's rule gives are the plain frequencies over the
    // scaled ones, as rope_inv_freq computes both.
    ModelConfig scaled = c;
    scaled.rope_scaling = s;
    const std::vector<float> plain = rope_inv_freq(c), rule = rope_inv_freq(scaled);
    for (int32_t i = 0; i < half; ++i) {
        const double expected = static_cast<double>(plain[i]) / rule[i];
        if (std::abs(divisors[i] - expected) > 1e-4 * expected) {
            throw LoadError(f.path() + ": tensor rope_freqs.weight holds RoPE divisors that are not Llama 3's scaling "
                            "(frequency " + std::to_string(i) + ": " + std::to_string(divisors[i]) + ", Llama 3 with factor " +
                            std::to_string(s.factor) + " gives " + std::to_string(expected) + "); tensorfold runs no other");
        }
    }
    c.rope_scaling = s;
}

std::string hf_name(const std::string& gguf) {
    static const std::pair<const char*, const char*> kTop[] = {
        {"token_embd.weight", "model.embed_tokens.weight"},
        {"output_norm.weight", "model.norm.weight"},
        {"output.weight", "lm_head.weight"},
    };
    for (const auto& [from, to] : kTop) {
        if (gguf == from) return to;
    }
    static const std::pair<const char*, const char*> kLayer[] = {
        {"attn_norm.weight", "input_layernorm.weight"},    {"attn_q.weight", "self_attn.q_proj.weight"},
        {"attn_k.weight", "self_attn.k_proj.weight"},      {"attn_v.weight", "self_attn.v_proj.weight"},
        {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_q.bias", "self_attn.q_proj.bias"},
        {"attn_k.bias", "self_attn.k_proj.bias"},          {"attn_v.bias", "self_attn.v_proj.bias"},
        {"attn_output.bias", "self_attn.o_proj.bias"},     {"attn_q_norm.weight", "self_attn.q_norm.weight"},
        {"attn_k_norm.weight", "self_attn.k_norm.weight"}, {"ffn_norm.weight", "post_attention_layernorm.weight"},
        {"ffn_gate.weight", "mlp.gate_proj.weight"},       {"ffn_up.weight", "mlp.up_proj.weight"},
        {"ffn_down.weight", "mlp.down_proj.weight"},       {"ffn_gate_inp.weight", "mlp.gate.weight"},
    };
    if (gguf.rfind("blk.", 0) == 0) {
        const size_t dot = gguf.find('.', 4);
        if (dot != std::string::npos && dot > 4) {
            const std::string layer = gguf.substr(4, dot - 4), rest = gguf.substr(dot + 1);
            for (const auto& [from, to] : kLayer) {
                if (rest == from) return "model.layers." + layer + "." + to;
            }
        }
    }
    return gguf;  // not one the loader reads; kept under its own name
}

std::optional<QuantType> quant_of(uint32_t type) {
    switch (type) {
        case ggml_type::q8_0: return QuantType::q8_0;
        case ggml_type::q4_0: return QuantType::q4_0;
        case ggml_type::q4_k: return QuantType::q4_k;
        case ggml_type::q6_k: return QuantType::q6_k;
        case ggml_type::q5_k: return QuantType::q5_k;
        case ggml_type::q5_0: return QuantType::q5_0;
        default: return std::nullopt;
    }
}

// The bytes the checkpoint keeps beyond the mapping: unpermuted and converted copies.
struct GgufOwner {
    std::shared_ptr<const GgufFile> file;
    std::vector<std::vector<std::byte>> copies;
};

// llama.cpp's converter stores head h's row 2j+s (s = 0, 1) from the
// transformers row s*half + j; this reads it back.
void unpermute_rows(const std::byte* from, std::byte* to, int64_t rows, size_t row_bytes, int32_t heads) {
    const int64_t head_rows = rows / heads, half = head_rows / 2;
    for (int64_t h = 0; h < heads; ++h) {
        for (int64_t s = 0; s < 2; ++s) {
            for (int64_t j = 0; j < half; ++j) {
                const int64_t hf_row = h * head_rows + s * half + j, gguf_row = h * head_rows + 2 * j + s;
                std::memcpy(to + hf_row * row_bytes, from + gguf_row * row_bytes, row_bytes);
            }
        }
    }
}

// Ends of generation: the ids the file names, then end-of-turn control
// tokens by their text.
void read_end_of_generation(const GgufFile& f, ModelConfig& c) {
    auto add_eos = [&](int64_t id, const std::string& key) {
        if (id < 0 || id >= c.vocab_size) {
            throw LoadError(f.path() + ": " + key + " " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(c.vocab_size));
        }
        for (int32_t have : c.eos_token_ids) {
            if (have == id) return;
        }
        c.eos_token_ids.push_back(static_cast<int32_t>(id));
    };
    for (const char* key :
         {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
        if (auto id = f.optional_unsigned_int(key)) add_eos(static_cast<int64_t>(*id), key);
    }
    const std::vector<std::string>& tokens = f.strings("tokenizer.ggml.tokens");
    const std::vector<int64_t>& types = f.ints("tokenizer.ggml.token_type");
    for (size_t id = 0; id < tokens.size() && id < types.size() && id < static_cast<size_t>(c.vocab_size); ++id) {
        if (types[id] != kControlToken) continue;
        for (const char* text : kEndOfGenerationTexts) {
            if (tokens[id] == text) add_eos(static_cast<int64_t>(id), "tokenizer.ggml.tokens");
        }
    }
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& f) {
    const std::string arch = f.string("general.architecture");
    const Architecture* known = nullptr;
    for (const Architecture& a : kArchitectures) {
        if (arch == a.gguf) known = &a;
    }
    ModelConfig c;
    if (is_nemotron_h_arch(arch)) {
        read_gguf_nemotron_h(f, arch, c);
        read_end_of_generation(f, c);
        return c;
    }
    if (!known) {
        throw LoadError(f.path() + ": general.architecture \"" + arch +
                        "\" is not one tensorfold serves (llama, qwen2, qwen3, qwen3moe, nemotron_h, nemotron_h_moe)");
    }
    c.architecture = known->hf;
    c.family = known->family;
    c.torch_dtype = "gguf";
    const std::string k = arch + ".";
    c.hidden_size = f.count(k + "embedding_length");
    c.num_layers = f.count(k + "block_count");
    c.num_heads = f.count(k + "attention.head_count");
    c.num_kv_heads = f.find(k + "attention.head_count_kv") ? f.count(k + "attention.head_count_kv") : c.num_heads;
    c.intermediate_size = f.count(k + "feed_forward_length");
    c.max_position_embeddings = f.count(k + "context_length");
    if (c.num_heads % c.num_kv_heads != 0) {
        throw LoadError(f.path() + ": " + k + "attention.head_count " + std::to_string(c.num_heads) +
                        " is not a multiple of head_count_kv " + std::to_string(c.num_kv_heads));
    }
    if (f.find(k + "attention.key_length")) {
        c.head_dim = f.count(k + "attention.key_length");
    } else {
        if (c.hidden_size % c.num_heads != 0) {
            throw LoadError(f.path() + ": " + k + "embedding_length is not a multiple of the head count and " + k +
                            "attention.key_length is missing");
        }
        c.head_dim = c.hidden_size / c.num_heads;
    }
    if (f.find(k + "attention.value_length") && f.count(k + "attention.value_length") != c.head_dim) {
        throw LoadError(f.path() + ": " + k + "attention.value_length differs from key_length; tensorfold needs them equal");
    }
    if (c.head_dim % 2 != 0) throw LoadError(f.path() + ": " + k + "attention.key_length must be even for RoPE");
    c.rms_norm_eps = static_cast<float>(f.number(k + "attention.layer_norm_rms_epsilon"));
    c.rope_theta = f.optional_number(k + "rope.freq_base").value_or(10000.0);
    if (!(c.rope_theta > 0)) throw LoadError(f.path() + ": " + k + "rope.freq_base must be positive");
    if (auto type = f.optional_string(k + "rope.scaling.type"); type && *type != "none") {
        const double factor = f.optional_number(k + "rope.scaling.factor").value_or(1.0);
        if (factor != 1.0) {
            throw LoadError(f.path() + ": " + k + "rope.scaling.type \"" + *type +
                            "\" is not supported (tensorfold runs plain RoPE and Llama 3's scaling)");
        }
    }
    if (const GgufTensor* freqs = f.find_tensor("rope_freqs.weight")) read_llama3_rope_freqs(f, k, *freqs, c);

    const GgufTensor* embed = f.find_tensor("token_embd.weight");
    if (!embed || embed->dims.size() != 2) throw LoadError(f.path() + ": tensor token_embd.weight is missing or not a matrix");
    if (embed->dims[1] > INT32_MAX) throw LoadError(f.path() + ": token_embd.weight has too many rows");
    c.vocab_size = static_cast<int32_t>(embed->dims[1]);
    if (auto n = f.optional_unsigned_int(k + "vocab_size"); n && *n != static_cast<uint64_t>(c.vocab_size)) {
        throw LoadError(f.path() + ": " + k + "vocab_size " + std::to_string(*n) + " differs from token_embd.weight's " +
                        std::to_string(c.vocab_size) + " rows");
    }
    c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
    c.qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
    c.o_bias = f.find_tensor("blk.0.attn_output.bias") != nullptr;
    c.qk_norm = c.family == Family::qwen3;
    if (c.family == Family::qwen3 && c.qkv_bias) {
        throw LoadError(f.path() + ": a " + arch + " file with attention biases is not one tensorfold knows");
    }
    if (arch == "qwen3moe") read_gguf_experts(f, arch, c);

    read_end_of_generation(f, c);
    return c;
}

Checkpoint gguf_checkpoint(std::shared_ptr<const GgufFile> file, const ModelConfig& config) {
    auto owner = std::make_shared<GgufOwner>();
    owner->file = file;
    std::map<std::string, TensorView> tensors;
    for (const GgufTensor& t : file->tensors()) {
        TensorView view;
        const bool nemotron_h = config.family == Family::nemotron_h;
        view.name = nemotron_h ? nemotron_h_name(t.name) : hf_name(t.name);
        if (view.name.empty()) view.name = t.name;  // beyond the layers run (a prediction head)
        view.stored_name = t.name;
        view.file = t.file;
        view.dtype_text = ggml_type_name(t.type);
        view.dtype = t.type == ggml_type::f32 ? DType::f32 : t.type == ggml_type::f16 ? DType::f16
                   : t.type == ggml_type::bf16 ? DType::bf16 : DType::other;
        view.quant = quant_of(t.type);
        for (auto d = t.dims.rbegin(); d != t.dims.rend(); ++d) view.shape.push_back(static_cast<int64_t>(*d));
        view.data = t.data;
        view.bytes = t.bytes;
        const bool q = t.name.ends_with("attn_q.weight") || t.name.ends_with("attn_q.bias");
        const bool k = t.name.ends_with("attn_k.weight") || t.name.ends_with("attn_k.bias");
        // The converter reorders NemotronH's Q and K as Llama's, RoPE or not.
        if ((config.family == Family::llama || nemotron_h) && (q || k)) {
            const int32_t heads = q ? config.num_heads : config.num_kv_heads;
            const int64_t rows = view.shape.front();
            if (rows % (2 * heads) != 0) {
                throw LoadError(t.file + ": tensor " + t.name + " has " + std::to_string(rows) + " rows, not " +
                                std::to_string(heads) + " heads of an even size");
            }
            std::vector<std::byte> copy(view.bytes);
            unpermute_rows(view.data, copy.data(), rows, view.bytes / static_cast<size_t>(rows), heads);
            view.data = owner->copies.emplace_back(std::move(copy)).data();
        }
        if (config.moe.enabled() && is_stacked_experts(t.name)) {
            add_expert_views(view, config, tensors);
            continue;
        }
        if (config.moe.enabled() && t.name.ends_with(".ffn_gate_inp.weight"))
            view = router_in_f32(std::move(view), owner->copies);
        if (nemotron_h) nemotron_h_view(view, config, owner->copies);
        tensors.emplace(view.name, std::move(view));
    }
    return Checkpoint::adopt(file->path(), std::move(tensors), std::move(owner));
}

std::optional<std::string> find_gguf_model(const std::string& model) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_regular_file(model, ec)) {
        if (is_gguf_path(model)) return model;
        return std::nullopt;
    }
    if (!fs::is_directory(model, ec) || fs::exists(fs::path(model) / "config.json", ec)) return std::nullopt;
    std::vector<std::string> models;
    for (const auto& entry : fs::directory_iterator(model, ec)) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_regular_file(ec) || !is_gguf_path(name)) continue;
        // A split set counts once, by its first file.
        if (const auto split = gguf_split_name(name); split && split->index != 1) continue;
        models.push_back(entry.path().string());
    }
    if (models.empty()) return std::nullopt;
    if (models.size() > 1) {
        std::sort(models.begin(), models.end());
        std::string list;
        for (const std::string& m : models) list += "\n  " + m;
        throw LoadError(model + ": holds " + std::to_string(models.size()) + " GGUF models; pass the file to serve:" + list);
    }
    return models.front();
}

}  // namespace tf::model
