#include "model/checkpoint_writer.h"

#include "model/checkpoint_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace tf::model {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& text) {
    uint64_t hash = 0xCBF29CE484222325ull;
    for (unsigned char ch : text) hash = (hash ^ ch) * 0x100000001B3ull;
    return hash;
}

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

size_t element_bytes(DType dtype) { return dtype == DType::f32 ? 4 : 2; }

void write_tensor_data(std::ofstream& out, const CheckpointSpec& spec, const TensorSpec& t, const WeightSource* source) {
    uint64_t count = 1;
    for (int64_t d : t.shape) count *= static_cast<uint64_t>(d);
    const size_t bytes = element_bytes(spec.dtype);
    std::vector<char> buffer;
    constexpr uint64_t kChunk = 1 << 22;
    // Each element is a pure function of its index, so the cores fill
    // disjoint parts of a chunk (a 30B-shape checkpoint is tens of GB).
    const unsigned cores = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
    for (uint64_t begin = 0; begin < count; begin += kChunk) {
        const uint64_t end = std::min(count, begin + kChunk);
        buffer.resize((end - begin) * bytes);
        auto fill = [&](uint64_t first, uint64_t last) {
            std::vector<float> values;
            if (source) {
                values.resize(last - first);
                source->fill(t, first, last, values.data());
            }
            for (uint64_t i = first; i < last; ++i) {
                const float value = source ? values[i - first] : checkpoint_value(spec, t.name, t.shape, i);
                char* at = buffer.data() + (i - begin) * bytes;
                if (spec.dtype == DType::f32) {
                    std::memcpy(at, &value, 4);
                } else {
                    const uint16_t half = spec.dtype == DType::bf16 ? float_to_bf16(value) : float_to_half(value);
                    std::memcpy(at, &half, 2);
                }
            }
        };
        const uint64_t part = (end - begin + cores - 1) / cores;
        std::vector<std::thread> helpers;
        for (unsigned c = 1; c < cores && begin + c * part < end; ++c) {
            helpers.emplace_back(fill, begin + c * part, std::min(end, begin + (c + 1) * part));
        }
        fill(begin, std::min(end, begin + part));
        for (std::thread& h : helpers) h.join();
        out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    }
}

// One safetensors file holding `tensors`.
void write_safetensors(const fs::path& path, const CheckpointSpec& spec, const std::vector<TensorSpec>& tensors,
                       const WeightSource* source) {
    json header = json::object();
    uint64_t offset = 0;
    const char* dtype = dtype_name(spec.dtype);
    for (const TensorSpec& t : tensors) {
        uint64_t count = 1;
        for (int64_t d : t.shape) count *= static_cast<uint64_t>(d);
        const uint64_t bytes = count * element_bytes(spec.dtype);
        header[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    header["__metadata__"] = {{"format", "pt"}};
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const uint64_t length = text.size();
    char length_bytes[8];
    for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
    out.write(length_bytes, 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    // json sorts keys; the data follows the offsets assigned in `tensors` order.
    for (const TensorSpec& t : tensors) write_tensor_data(out, spec, t, source);
    out.flush();
    if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

}  // namespace

uint16_t float_to_bf16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);
    bits += 0x7FFF + ((bits >> 16) & 1);
    return static_cast<uint16_t>(bits >> 16);
}

uint16_t float_to_half(float value) {
    uint32_t x;
    std::memcpy(&x, &value, 4);
    const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
    x &= 0x7FFFFFFF;
    if (x > 0x7F800000) return sign | 0x7E00;  // NaN
    if (x >= 0x477FF000) return sign | 0x7C00;  // rounds to infinity
    if (x < 0x38800000) {                       // half subnormal or zero: value * 2^24, rounded to even
        const float scaled = std::fabs(value) * 16777216.0f;
        return sign | static_cast<uint16_t>(std::nearbyint(scaled));
    }
    x += 0xFFF + ((x >> 13) & 1);
    return sign | static_cast<uint16_t>((x - 0x38000000) >> 13);
}

namespace {

// The per-expert element a fused one stands for: "...experts.gate_up_proj"
// [E, 2I, H] at (e, r, c) is experts.e.gate_proj.weight (r < I) or
// up_proj.weight (r - I) at (r, c); down_proj and NemotronH's up_proj at
// (e, ...) are experts.e.*.weight. Empty name: not a fused expert tensor.
struct PerExpertElement {
    std::string name;
    std::vector<int64_t> shape;
    uint64_t index = 0;
};

PerExpertElement per_expert_element(const std::string& name, const std::vector<int64_t>& shape, uint64_t index) {
    const bool gate_up = ends_with(name, ".experts.gate_up_proj"), down = ends_with(name, ".experts.down_proj"),
               up = ends_with(name, ".experts.up_proj");
    if ((!gate_up && !down && !up) || shape.size() != 3) return {};
    const std::string prefix = name.substr(0, name.rfind('.') + 1);  // "...mlp.experts."
    const uint64_t per_expert = static_cast<uint64_t>(shape[1]) * static_cast<uint64_t>(shape[2]);
    const std::string e = prefix + std::to_string(index / per_expert) + ".";
    const uint64_t within = index % per_expert;
    if (down || up) return {e + (down ? "down_proj.weight" : "up_proj.weight"), {shape[1], shape[2]}, within};
    const int64_t inter = shape[1] / 2;
    const uint64_t half = static_cast<uint64_t>(inter) * static_cast<uint64_t>(shape[2]);
    if (within < half) return {e + "gate_proj.weight", {inter, shape[2]}, within};
    return {e + "up_proj.weight", {inter, shape[2]}, within - half};
}

}  // namespace

float checkpoint_value(const CheckpointSpec& spec, const std::string& name, const std::vector<int64_t>& shape,
                       uint64_t index) {
    if (spec.fused_experts) {
        const PerExpertElement element = per_expert_element(name, shape, index);
        if (!element.name.empty()) return checkpoint_value(spec, element.name, element.shape, element.index);
    }
    const uint64_t bits = splitmix64(splitmix64(spec.seed ^ fnv1a(name)) + index);
    // Uniform in [-1, 1), never exactly zero: the low bit is forced on.
    const double u = (static_cast<double>((bits >> 11) | 1) * 0x1.0p-53) * 2.0 - 1.0;
    // The new architectures' rules come first and touch only their own names,
    // so the older architectures' bytes (and fixtures) stay as they were.
    if (is_nemotron_h(spec)) {
        // A = -exp(A_log) in [-16, -1]: every head forgets, none explodes.
        if (ends_with(name, ".mixer.A_log")) return static_cast<float>(std::log(1.0 + 7.5 * (u + 1.0)));
        // softplus(dt_bias) log-uniform in [0.01, 0.1], Mamba2's own init range:
        // dt then stays far above time_step_min (0.001), where transformers'
        // pure-torch path clamps, so clamping or not reads the same.
        if (ends_with(name, ".mixer.dt_bias")) {
            const double dt = std::exp(std::log(0.01) + 0.5 * (u + 1.0) * std::log(10.0));
            return static_cast<float>(dt + std::log(-std::expm1(-dt)));
        }
        if (ends_with(name, ".mixer.D")) return static_cast<float>(1.0 + 0.5 * u);
        // The sigmoid router at twice the usual scale: logits of a few units
        // spread the scores, and larger ones would bunch them near 1. The
        // correction bias is of the size of the gaps between scores, so it
        // changes some choices and a test sees whether it is applied.
        if (ends_with(name, ".mixer.gate.weight")) {
            return static_cast<float>(2.0 * u * std::sqrt(3.0 / static_cast<double>(shape.back())));
        }
        if (ends_with(name, ".mixer.gate.e_score_correction_bias")) return static_cast<float>(0.1 * u);
        if (name == "backbone.embeddings.weight") return static_cast<float>(0.5 * u);
        if (ends_with(name, "norm_f.weight")) return static_cast<float>(1.0 + 0.1 * u);
        if (ends_with(name, ".mixer.in_proj.weight")) {
            // The dt rows, a quarter of the usual scale: dt_raw of order 0.25
            // keeps softplus(dt_raw + dt_bias) in about [0.003, 0.15].
            const MambaDims m = mamba_dims(spec);
            const double scale =
                static_cast<int64_t>(index / static_cast<uint64_t>(shape.back())) >= m.inner + m.conv ? 0.25 : 1.0;
            return static_cast<float>(scale * u * std::sqrt(3.0 / static_cast<double>(shape.back())));
        }
    }
    // Routers at 3x the usual scale: a token's logits spread over a few units,
    // so its top-k choice is rarely a near tie another engine's rounding flips.
    if (is_qwen3_moe(spec) && ends_with(name, ".mlp.gate.weight")) {
        return static_cast<float>(3.0 * u * std::sqrt(3.0 / static_cast<double>(shape.back())));
    }
    // LayerNorm1P applies 1 + weight: weights near 0 make scales near 1.
    if (is_nemotron(spec) && (ends_with(name, "layernorm.weight") || name == "model.norm.weight")) {
        return static_cast<float>(0.1 * u);
    }
    if (ends_with(name, "norm.weight")) return static_cast<float>(1.0 + 0.1 * u);
    if (ends_with(name, ".bias")) return static_cast<float>(0.2 * u);
    if (name == "model.embed_tokens.weight") return static_cast<float>(0.5 * u);
    // Matrices: variance 1 / fan_in, so activations stay of order one.
    const double fan_in = static_cast<double>(shape.back());
    return static_cast<float>(u * std::sqrt(3.0 / fan_in));
}

namespace {

void check_nemotron_h_experts(const CheckpointSpec& s) {
    auto refuse = [](const std::string& why) { throw std::invalid_argument("NemotronH E layers: " + why); };
    if (s.num_experts <= 0) refuse("n_routed_experts must be positive (the pattern holds E)");
    if (s.expert_intermediate <= 0) refuse("moe_intermediate_size must be positive");
    // The published class always builds one shared expert.
    if (s.shared_expert_intermediate <= 0) refuse("moe_shared_expert_intermediate_size must be positive");
    if (s.moe_latent_size < 0) refuse("moe_latent_size must be positive, or 0 for none");
    // Each group is ranked by its two best scores, so it needs two experts.
    if (s.expert_groups <= 0 || s.num_experts % s.expert_groups != 0 || s.num_experts / s.expert_groups < 2) {
        refuse("n_group " + std::to_string(s.expert_groups) + " must divide n_routed_experts " +
               std::to_string(s.num_experts) + " into groups of 2 or more");
    }
    if (s.top_groups <= 0 || s.top_groups > s.expert_groups) {
        refuse("topk_group " + std::to_string(s.top_groups) + " is not in 1.." + std::to_string(s.expert_groups));
    }
    const int32_t reachable = s.top_groups * (s.num_experts / s.expert_groups);
    if (s.experts_per_token <= 0 || s.experts_per_token > reachable) {
        refuse("num_experts_per_tok " + std::to_string(s.experts_per_token) + " is not in 1.." +
               std::to_string(reachable) + " (the experts of topk_group groups)");
    }
}

// An E layer's mixer: router and its correction bias, the latent
// projections if any, the routed experts, the shared expert.
void push_nemotron_h_experts(std::vector<TensorSpec>& t, const CheckpointSpec& s, const std::string& mixer) {
    const int64_t hidden = s.hidden_size, experts = s.num_experts, inter = s.expert_intermediate,
                  shared = s.shared_expert_intermediate, width = s.moe_latent_size > 0 ? s.moe_latent_size : hidden;
    t.push_back({mixer + "gate.weight", {experts, hidden}});
    t.push_back({mixer + "gate.e_score_correction_bias", {experts}});
    if (s.moe_latent_size > 0) {
        t.push_back({mixer + "fc1_latent_proj.weight", {width, hidden}});
        t.push_back({mixer + "fc2_latent_proj.weight", {hidden, width}});
    }
    if (s.fused_experts) {
        t.push_back({mixer + "experts.up_proj", {experts, inter, width}});
        t.push_back({mixer + "experts.down_proj", {experts, width, inter}});
    } else {
        for (int64_t e = 0; e < experts; ++e) {
            const std::string p = mixer + "experts." + std::to_string(e) + ".";
            t.push_back({p + "up_proj.weight", {inter, width}});
            t.push_back({p + "down_proj.weight", {width, inter}});
        }
    }
    t.push_back({mixer + "shared_experts.up_proj.weight", {shared, hidden}});
    t.push_back({mixer + "shared_experts.down_proj.weight", {hidden, shared}});
}

std::vector<TensorSpec> nemotron_h_tensors(const CheckpointSpec& s) {
    if (s.hybrid_pattern.empty()) throw std::invalid_argument("NemotronH: hybrid_override_pattern is empty");
    if (s.hybrid_pattern.find('E') != std::string::npos) check_nemotron_h_experts(s);
    if (s.mamba_groups <= 0 || s.mamba_heads % s.mamba_groups != 0) {
        throw std::invalid_argument("NemotronH: mamba_num_heads must be a multiple of n_groups");
    }
    const int64_t hidden = s.hidden_size, q_dim = int64_t{s.num_heads} * s.head_dim,
                  kv_dim = int64_t{s.num_kv_heads} * s.head_dim, inter = s.intermediate_size;
    const MambaDims m = mamba_dims(s);
    std::vector<TensorSpec> t;
    t.push_back({"backbone.embeddings.weight", {s.vocab_size, hidden}});
    for (size_t i = 0; i < s.hybrid_pattern.size(); ++i) {
        const std::string p = "backbone.layers." + std::to_string(i) + ".";
        t.push_back({p + "norm.weight", {hidden}});
        const char kind = s.hybrid_pattern[i];
        if (kind == 'M') {
            t.push_back({p + "mixer.in_proj.weight", {m.proj, hidden}});
            t.push_back({p + "mixer.conv1d.weight", {m.conv, 1, s.conv_kernel}});
            t.push_back({p + "mixer.conv1d.bias", {m.conv}});
            t.push_back({p + "mixer.dt_bias", {s.mamba_heads}});
            t.push_back({p + "mixer.A_log", {s.mamba_heads}});
            t.push_back({p + "mixer.D", {s.mamba_heads}});
            t.push_back({p + "mixer.norm.weight", {m.inner}});
            t.push_back({p + "mixer.out_proj.weight", {hidden, m.inner}});
        } else if (kind == '*') {
            t.push_back({p + "mixer.q_proj.weight", {q_dim, hidden}});
            t.push_back({p + "mixer.k_proj.weight", {kv_dim, hidden}});
            t.push_back({p + "mixer.v_proj.weight", {kv_dim, hidden}});
            t.push_back({p + "mixer.o_proj.weight", {hidden, q_dim}});
        } else if (kind == '-') {
            t.push_back({p + "mixer.up_proj.weight", {inter, hidden}});
            t.push_back({p + "mixer.down_proj.weight", {hidden, inter}});
        } else if (kind == 'E') {
            push_nemotron_h_experts(t, s, p + "mixer.");
        } else {
            throw std::invalid_argument(std::string("NemotronH: pattern character '") + kind +
                                        "' (M Mamba2, * attention, - MLP, E experts)");
        }
    }
    t.push_back({"backbone.norm_f.weight", {hidden}});
    if (!s.tie_word_embeddings) t.push_back({"lm_head.weight", {s.vocab_size, hidden}});
    return t;
}

std::vector<TensorSpec> nemotron_tensors(const CheckpointSpec& s) {
    const int64_t hidden = s.hidden_size, q_dim = int64_t{s.num_heads} * s.head_dim,
                  kv_dim = int64_t{s.num_kv_heads} * s.head_dim, inter = s.intermediate_size;
    std::vector<TensorSpec> t;
    t.push_back({"model.embed_tokens.weight", {s.vocab_size, hidden}});
    for (int32_t i = 0; i < s.num_layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        t.push_back({p + "input_layernorm.weight", {hidden}});
        t.push_back({p + "input_layernorm.bias", {hidden}});
        t.push_back({p + "self_attn.q_proj.weight", {q_dim, hidden}});
        t.push_back({p + "self_attn.k_proj.weight", {kv_dim, hidden}});
        t.push_back({p + "self_attn.v_proj.weight", {kv_dim, hidden}});
        t.push_back({p + "self_attn.o_proj.weight", {hidden, q_dim}});
        if (s.attention_bias) {
            t.push_back({p + "self_attn.q_proj.bias", {q_dim}});
            t.push_back({p + "self_attn.k_proj.bias", {kv_dim}});
            t.push_back({p + "self_attn.v_proj.bias", {kv_dim}});
            t.push_back({p + "self_attn.o_proj.bias", {hidden}});
        }
        t.push_back({p + "post_attention_layernorm.weight", {hidden}});
        t.push_back({p + "post_attention_layernorm.bias", {hidden}});
        t.push_back({p + "mlp.up_proj.weight", {inter, hidden}});
        t.push_back({p + "mlp.down_proj.weight", {hidden, inter}});
    }
    t.push_back({"model.norm.weight", {hidden}});
    t.push_back({"model.norm.bias", {hidden}});
    if (!s.tie_word_embeddings) t.push_back({"lm_head.weight", {s.vocab_size, hidden}});
    return t;
}

void check_qwen3_moe(const CheckpointSpec& s) {
    auto refuse = [](const std::string& why) { throw std::invalid_argument("Qwen3MoeForCausalLM: " + why); };
    if (s.num_experts <= 0) refuse("num_experts must be positive");
    if (s.experts_per_token <= 0 || s.experts_per_token > s.num_experts) {
        refuse("num_experts_per_tok " + std::to_string(s.experts_per_token) + " is not in 1.." +
               std::to_string(s.num_experts));
    }
    if (s.expert_intermediate <= 0) refuse("moe_intermediate_size must be positive");
    if (s.decoder_sparse_step <= 0) refuse("decoder_sparse_step must be positive");
    for (int32_t layer : s.mlp_only_layers) {
        if (layer < 0 || layer >= s.num_layers) {
            refuse("mlp_only_layers names layer " + std::to_string(layer) + " of " + std::to_string(s.num_layers));
        }
    }
}

// A sparse layer's router and experts, in the layout `s` asks for.
void push_experts(std::vector<TensorSpec>& t, const CheckpointSpec& s, const std::string& mlp) {
    const int64_t hidden = s.hidden_size, experts = s.num_experts, inter = s.expert_intermediate;
    t.push_back({mlp + "gate.weight", {experts, hidden}});
    if (s.fused_experts) {
        t.push_back({mlp + "experts.gate_up_proj", {experts, 2 * inter, hidden}});
        t.push_back({mlp + "experts.down_proj", {experts, hidden, inter}});
        return;
    }
    for (int64_t e = 0; e < experts; ++e) {
        const std::string p = mlp + "experts." + std::to_string(e) + ".";
        t.push_back({p + "gate_proj.weight", {inter, hidden}});
        t.push_back({p + "up_proj.weight", {inter, hidden}});
        t.push_back({p + "down_proj.weight", {hidden, inter}});
    }
}

}  // namespace

bool is_sparse_layer(const CheckpointSpec& s, int32_t layer) {
    if (!is_qwen3_moe(s) || s.num_experts <= 0 || s.decoder_sparse_step <= 0) return false;
    if (std::find(s.mlp_only_layers.begin(), s.mlp_only_layers.end(), layer) != s.mlp_only_layers.end()) return false;
    return (layer + 1) % s.decoder_sparse_step == 0;
}

std::vector<TensorSpec> checkpoint_tensors(const CheckpointSpec& s) {
    if (is_nemotron_h(s)) return nemotron_h_tensors(s);
    if (is_nemotron(s)) return nemotron_tensors(s);
    if (is_qwen3_moe(s)) check_qwen3_moe(s);
    const int64_t hidden = s.hidden_size, q_dim = int64_t{s.num_heads} * s.head_dim,
                  kv_dim = int64_t{s.num_kv_heads} * s.head_dim, inter = s.intermediate_size;
    const bool qwen2 = s.architecture == "Qwen2ForCausalLM",
               qwen3 = s.architecture == "Qwen3ForCausalLM" || is_qwen3_moe(s),
               mistral = s.architecture == "MistralForCausalLM";
    const bool qkv_bias = qwen2 || (!mistral && s.attention_bias), o_bias = !qwen2 && !mistral && s.attention_bias;
    std::vector<TensorSpec> t;
    t.push_back({"model.embed_tokens.weight", {s.vocab_size, hidden}});
    for (int32_t i = 0; i < s.num_layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        t.push_back({p + "input_layernorm.weight", {hidden}});
        t.push_back({p + "self_attn.q_proj.weight", {q_dim, hidden}});
        t.push_back({p + "self_attn.k_proj.weight", {kv_dim, hidden}});
        t.push_back({p + "self_attn.v_proj.weight", {kv_dim, hidden}});
        t.push_back({p + "self_attn.o_proj.weight", {hidden, q_dim}});
        if (qkv_bias) {
            t.push_back({p + "self_attn.q_proj.bias", {q_dim}});
            t.push_back({p + "self_attn.k_proj.bias", {kv_dim}});
            t.push_back({p + "self_attn.v_proj.bias", {kv_dim}});
        }
        if (o_bias) t.push_back({p + "self_attn.o_proj.bias", {hidden}});
        if (qwen3) {
            t.push_back({p + "self_attn.q_norm.weight", {s.head_dim}});
            t.push_back({p + "self_attn.k_norm.weight", {s.head_dim}});
        }
        t.push_back({p + "post_attention_layernorm.weight", {hidden}});
        if (is_sparse_layer(s, i)) {
            push_experts(t, s, p + "mlp.");
            continue;
        }
        t.push_back({p + "mlp.gate_proj.weight", {inter, hidden}});
        t.push_back({p + "mlp.up_proj.weight", {inter, hidden}});
        t.push_back({p + "mlp.down_proj.weight", {hidden, inter}});
    }
    t.push_back({"model.norm.weight", {hidden}});
    if (!s.tie_word_embeddings) t.push_back({"lm_head.weight", {s.vocab_size, hidden}});
    return t;
}

void write_checkpoint(const CheckpointSpec& spec, const std::string& dir, const std::string& tokenizer_from,
                      const WeightSource* source) {
    // Listed first: a pattern it refuses leaves no half-written directory behind.
    std::vector<TensorSpec> tensors = checkpoint_tensors(spec);
    fs::create_directories(dir);
    write_text(fs::path(dir) / "config.json", config_json_text(spec));
    json generation = {{"eos_token_id", spec.eos_token_ids}, {"do_sample", false}};
    write_text(fs::path(dir) / "generation_config.json", generation.dump(2) + "\n");

    if (spec.shards <= 1) {
        write_safetensors(fs::path(dir) / "model.safetensors", spec, tensors, source);
    } else {
        // Consecutive tensors, about equal bytes per shard.
        uint64_t total = 0;
        std::vector<uint64_t> bytes;
        for (const TensorSpec& t : tensors) {
            uint64_t count = element_bytes(spec.dtype);
            for (int64_t d : t.shape) count *= static_cast<uint64_t>(d);
            bytes.push_back(count);
            total += count;
        }
        json weight_map = json::object();
        size_t next = 0;
        uint64_t written = 0;
        for (int32_t shard = 0; shard < spec.shards; ++shard) {
            char file_name[64];
            std::snprintf(file_name, sizeof file_name, "model-%05d-of-%05d.safetensors", shard + 1, spec.shards);
            std::vector<TensorSpec> part;
            const uint64_t goal = total * static_cast<uint64_t>(shard + 1) / static_cast<uint64_t>(spec.shards);
            while (next < tensors.size() && (written < goal || shard == spec.shards - 1)) {
                weight_map[tensors[next].name] = file_name;
                written += bytes[next];
                part.push_back(tensors[next++]);
            }
            write_safetensors(fs::path(dir) / file_name, spec, part, source);
        }
        json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
        write_text(fs::path(dir) / "model.safetensors.index.json", index.dump(2) + "\n");
    }

    if (!tokenizer_from.empty()) {
        bool copied = false;
        for (const char* file : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                                 "merges.txt", "tokenizer.model"}) {
            fs::path from = fs::path(tokenizer_from) / file;
            if (!fs::exists(from)) continue;
            fs::copy_file(from, fs::path(dir) / file, fs::copy_options::overwrite_existing);
            copied = true;
        }
        if (!copied) throw std::runtime_error(tokenizer_from + ": holds no tokenizer.json or tokenizer.model to copy");
    }
}

}  // namespace tf::model
