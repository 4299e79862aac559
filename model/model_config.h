// ModelConfig: the architecture description read from a Hugging Face
// directory's config.json and generation_config.json. Plain data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tf::model {

// The families the loader knows. The first four differ only in the few
// switches below; everything else is the Llama decoder layer. Nemotron
// (Nemotron-4, Minitron) swaps in LayerNorm1P, a squared-ReLU MLP and
// partial RoPE; NemotronH mixes Mamba2, attention and MLP layers.
enum class Family { llama, mistral, qwen2, qwen3, nemotron, nemotron_h };  // Qwen3-MoE is qwen3 with moe

// What one layer computes. A decoder layer is attention then MLP, each with
// its own norm; NemotronH layers are one mixer each, h + mixer(norm(h)).
// A decoder layer's feed-forward part is a dense MLP or, in a mixture-of-
// experts model, the experts (ModelConfig::sparse_layers); a NemotronH `moe`
// layer is a mixer of experts alone.
enum class LayerKind : uint8_t { decoder, mamba, attention, mlp, moe };

// NemotronH's Mamba2 mixer. in_proj yields z (inner), xBC (conv_dim) and dt
// (num_heads), in that order; xBC is x (inner), B and C (groups * state_size
// each).
struct MambaConfig {
    int32_t num_heads = 0;    // H; 0 = the model has no Mamba layers
    int32_t head_dim = 0;     // P: inner = H * P
    int32_t state_size = 0;   // N
    int32_t groups = 0;       // G: heads h*G/H .. share one B and C
    int32_t conv_kernel = 0;  // K: the causal conv reads the last K xBC inputs
    bool conv_bias = true;
    bool proj_bias = false;  // "use_bias": in_proj and out_proj carry a bias
    // time_step_limit: dt is clamped into [dt_min, dt_max]; the default
    // (0, inf) leaves softplus's output as it is.
    float dt_min = 0.0f;
    float dt_max = std::numeric_limits<float>::infinity();

    int32_t inner() const { return num_heads * head_dim; }
    int32_t conv_dim() const { return inner() + 2 * groups * state_size; }
    int32_t in_proj_rows() const { return inner() + conv_dim() + num_heads; }
    // Floats of one stream's recurrent state in one layer.
    size_t state_floats() const { return static_cast<size_t>(inner()) * state_size; }
};

// How a router turns its logits into expert weights.
//   softmax (Qwen3-MoE): p = softmax(logits) in fp32 over every expert; the
//     k largest p are chosen and, with norm_topk_prob, divided by their sum.
//   sigmoid (NemotronH, DeepSeek-V3): s = sigmoid(logits); choice by
//     s + score_bias (e_score_correction_bias), first the `top_groups` best of
//     `groups` equal groups (a group's rank: the sum of its two best biased
//     scores; the other groups' experts are out), then the k best experts
//     inside them; weights are the unbiased
//     s of the chosen, divided by their sum with norm_topk_prob, times
//     routed_scaling_factor.
// Ties go to the lower expert index, in both steps.
enum class RouterKind { softmax, sigmoid };

struct MoeConfig {
    int32_t num_experts = 0;         // 0 = no layer has experts
    int32_t experts_per_token = 0;   // k of the top-k
    int32_t expert_intermediate = 0;  // the inner width of one expert
    bool norm_topk_prob = false;
    RouterKind router = RouterKind::softmax;
    int32_t groups = 1;      // n_group (sigmoid routers)
    int32_t top_groups = 1;  // topk_group
    float routed_scaling_factor = 1.0f;
    // NemotronH: an always-on shared expert on the same input, its inner
    // width (0 = none); and a latent width the routed experts work in (the
    // input projected down to it, their sum projected back up; 0 = none).
    int32_t shared_expert_intermediate = 0;
    int32_t latent_size = 0;

    bool enabled() const { return num_experts > 0; }
};

enum class NormKind { rms, layer_norm_1p };  // layer_norm_1p: LayerNorm with bias, scaled by 1 + weight
enum class MlpKind { silu_gated, relu2 };    // down(silu(gate) * up) or down(relu(up)^2)

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

    NormKind norm = NormKind::rms;  // rms_norm_eps is the eps of either kind
    MlpKind mlp = MlpKind::silu_gated;
    bool mlp_bias = false;               // Nemotron(H) "mlp_bias": up and down carry a bias
    bool rotary = true;                  // false: attention has no position encoding (NemotronH)
    int32_t rotary_dim = 0;              // dims of each head RoPE turns; 0 = all (Nemotron: partial_rotary_factor)
    std::vector<LayerKind> layer_kinds;  // NemotronH, one per layer; empty = every layer a decoder layer
    MambaConfig mamba;
    MoeConfig moe;
    // Qwen3-MoE, one per layer: whether the decoder layer's feed-forward part
    // is the experts (decoder_sparse_step, mlp_only_layers); empty = none is.
    std::vector<bool> sparse_layers;

    LayerKind layer_kind(int32_t layer) const { return layer_kinds.empty() ? LayerKind::decoder : layer_kinds[layer]; }
    bool has_attention(int32_t layer) const {
        const LayerKind kind = layer_kind(layer);
        return kind == LayerKind::decoder || kind == LayerKind::attention;
    }
    // A feed-forward part of either kind: a dense MLP or experts.
    bool has_mlp(int32_t layer) const {
        const LayerKind kind = layer_kind(layer);
        return kind == LayerKind::decoder || kind == LayerKind::mlp || kind == LayerKind::moe;
    }
    // The feed-forward part is the experts.
    bool has_experts(int32_t layer) const {
        const LayerKind kind = layer_kind(layer);
        return kind == LayerKind::moe ||
               (kind == LayerKind::decoder && !sparse_layers.empty() && sparse_layers[static_cast<size_t>(layer)]);
    }
    int32_t expert_layer_count() const {
        int32_t n = 0;
        for (int32_t i = 0; i < num_layers; ++i) n += has_experts(i) ? 1 : 0;
        return n;
    }
    // Recurrent layers keep one state per stream instead of one KV entry per
    // position, so a stream can only be resumed where that state was kept.
    bool recurrent() const { return mamba.num_heads > 0; }
    int32_t rope_dim() const { return !rotary ? 0 : rotary_dim > 0 ? rotary_dim : head_dim; }
    int32_t mamba_layer_count() const {
        int32_t n = 0;
        for (LayerKind kind : layer_kinds) n += kind == LayerKind::mamba ? 1 : 0;
        return n;
    }
    int32_t attention_layer_count() const {
        int32_t n = 0;
        for (int32_t i = 0; i < num_layers; ++i) n += has_attention(i) ? 1 : 0;
        return n;
    }
};

// Python's json module writes float('inf') as a bare Infinity (NemotronH
// configs' time_step_limit), which strict JSON lacks: this returns `text`
// with Infinity, -Infinity and NaN outside string literals quoted, so a
// strict parser reads them as strings.
std::string quote_nonfinite_numbers(const std::string& text);

// Reads DIR/config.json and, when present, DIR/generation_config.json.
// Throws LoadError naming the file and field for an unknown architecture, a
// missing or mistyped field, or an unsupported option.
ModelConfig load_model_config(const std::string& dir);

// The same from JSON text already in memory; `where` names the file in errors.
ModelConfig parse_model_config(const std::string& config_json, const std::string& where,
                               const std::string& generation_config_json = "",
                               const std::string& generation_where = "");

}  // namespace tf::model
