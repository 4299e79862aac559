#include "model/gguf_nemotron.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

#include "model/checkpoint_writer.h"
#include "model/load_error.h"
#include "model/safetensors.h"

namespace tf::model {

namespace {

// log(-A) of a file's A, back to the A_log it came from. The converter
// took A = -exp(A_log) in f32, so the log lands within a few parts in 1e8
// of A_log: for a bf16 checkpoint (the usual kind) the nearest bf16 value
// is then A_log exactly, which a plain f32 rounding would miss by an ulp
// now and then, and that ulp would show in every later logit. A value no
// bf16 lies that close to came from an f32 A_log and stays as computed.
float nearest_bf16_if_within_rounding(double exact) {
    const auto rounded = static_cast<float>(exact);
    const float bf16 = bf16_to_float(float_to_bf16(rounded));
    return std::fabs(exact - bf16) <= 1e-6 * std::fabs(exact) ? bf16 : rounded;
}

// A layer tensor's GGUF suffix and its name under backbone.layers.N.
constexpr std::pair<const char*, const char*> kLayerNames[] = {
    {"attn_norm.weight", "norm.weight"},
    {"ssm_in.weight", "mixer.in_proj.weight"},
    {"ssm_conv1d.weight", "mixer.conv1d.weight"},
    {"ssm_conv1d.bias", "mixer.conv1d.bias"},
    {"ssm_dt.bias", "mixer.dt_bias"},
    {"ssm_a", "mixer.A_log"},  // holds A; nemotron_h_view turns it back
    {"ssm_d", "mixer.D"},
    {"ssm_norm.weight", "mixer.norm.weight"},
    {"ssm_out.weight", "mixer.out_proj.weight"},
    {"attn_q.weight", "mixer.q_proj.weight"},
    {"attn_k.weight", "mixer.k_proj.weight"},
    {"attn_v.weight", "mixer.v_proj.weight"},
    {"attn_output.weight", "mixer.o_proj.weight"},
    {"attn_q.bias", "mixer.q_proj.bias"},
    {"attn_k.bias", "mixer.k_proj.bias"},
    {"attn_v.bias", "mixer.v_proj.bias"},
    {"attn_output.bias", "mixer.o_proj.bias"},
    {"ffn_up.weight", "mixer.up_proj.weight"},
    {"ffn_down.weight", "mixer.down_proj.weight"},
    {"ffn_up.bias", "mixer.up_proj.bias"},
    {"ffn_down.bias", "mixer.down_proj.bias"},
    {"ffn_gate_inp.weight", "mixer.gate.weight"},
    {"exp_probs_b.bias", "mixer.gate.e_score_correction_bias"},
    {"ffn_up_shexp.weight", "mixer.shared_experts.up_proj.weight"},
    {"ffn_down_shexp.weight", "mixer.shared_experts.down_proj.weight"},
    {"ffn_latent_down.weight", "mixer.fc1_latent_proj.weight"},
    {"ffn_latent_up.weight", "mixer.fc2_latent_proj.weight"},
    {"ffn_up_exps.weight", "ffn_up_exps.weight"},  // split per expert by gguf_experts
    {"ffn_down_exps.weight", "ffn_down_exps.weight"},
};

// llama.cpp's gating function numbers (gguf-py ExpertGatingFuncType).
constexpr uint64_t kSigmoidGating = 2;


int32_t optional_count(const GgufFile& f, const std::string& key, int32_t fallback) {
    return f.find(key) ? f.count(key) : fallback;
}

// A key llama.cpp writes per layer: the array, or a scalar for every layer;
// empty when absent.
std::vector<int64_t> per_layer(const GgufFile& f, const std::string& key, int32_t layers) {
    const GgufValue* v = f.find(key);
    if (!v) return {};
    if (v->type != GgufType::array) return std::vector<int64_t>(static_cast<size_t>(layers), f.unsigned_int(key));
    const std::vector<int64_t>& values = f.ints(key);
    if (values.size() != static_cast<size_t>(layers)) {
        throw LoadError(f.path() + ": " + key + " has " + std::to_string(values.size()) + " entries for " +
                        std::to_string(layers) + " layers");
    }
    return values;
}

std::optional<std::pair<int32_t, std::string>> split_layer_name(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return std::nullopt;
    const size_t dot = name.find('.', 4);
    if (dot == std::string::npos || dot == 4) return std::nullopt;
    int32_t layer = 0;
    for (size_t i = 4; i < dot; ++i) {
        if (name[i] < '0' || name[i] > '9' || layer > 100000) return std::nullopt;
        layer = layer * 10 + (name[i] - '0');
    }
    return std::pair{layer, name.substr(dot + 1)};
}

const char* kind_name(LayerKind kind) {
    switch (kind) {
        case LayerKind::mamba: return "Mamba2";
        case LayerKind::attention: return "attention";
        case LayerKind::mlp: return "MLP";
        case LayerKind::moe: return "experts";
        case LayerKind::decoder: break;
    }
    return "decoder";
}

// Each layer's kind from the tensor that starts its mixer.
std::vector<LayerKind> layer_kinds(const GgufFile& f, int32_t layers) {
    constexpr std::pair<const char*, LayerKind> kMarks[] = {
        {"ssm_in.weight", LayerKind::mamba},
        {"attn_q.weight", LayerKind::attention},
        {"ffn_up.weight", LayerKind::mlp},
        {"ffn_gate_inp.weight", LayerKind::moe},
    };
    std::vector<LayerKind> kinds;
    for (int32_t i = 0; i < layers; ++i) {
        const std::string blk = "blk." + std::to_string(i) + ".";
        std::string found;
        for (const auto& [mark, kind] : kMarks) {
            if (!f.find_tensor(blk + mark)) continue;
            if (!found.empty()) {
                throw LoadError(f.path() + ": layer " + std::to_string(i) + " has both " + found + " and " + blk +
                                mark + "; a NemotronH layer is one mixer");
            }
            found = blk + mark;
            kinds.push_back(kind);
        }
        if (found.empty()) {
            throw LoadError(f.path() + ": layer " + std::to_string(i) + " has none of " + blk + "ssm_in.weight, " +
                            blk + "attn_q.weight, " + blk + "ffn_up.weight, " + blk + "ffn_gate_inp.weight");
        }
    }
    return kinds;
}

void require_tensor(const GgufFile& f, int32_t layer, const char* rest, LayerKind kind) {
    const std::string name = "blk." + std::to_string(layer) + "." + rest;
    if (!f.find_tensor(name)) {
        throw LoadError(f.path() + ": tensor " + name + " is missing (layer " + std::to_string(layer) + " is " +
                        kind_name(kind) + ")");
    }
}

void read_experts(const GgufFile& f, const std::string& k, ModelConfig& c) {
    MoeConfig& m = c.moe;
    m.router = RouterKind::sigmoid;
    if (auto g = f.optional_unsigned_int(k + "expert_gating_func"); g && *g != kSigmoidGating) {
        throw LoadError(f.path() + ": " + k + "expert_gating_func is " + std::to_string(*g) +
                        "; a NemotronH router is a sigmoid (2), and tensorfold runs no other for this architecture");
    }
    m.num_experts = f.count(k + "expert_count");
    m.experts_per_token = f.count(k + "expert_used_count");
    m.expert_intermediate = f.count(k + "expert_feed_forward_length");
    const int32_t shared = static_cast<int32_t>(f.optional_unsigned_int(k + "expert_shared_count").value_or(0));
    if (shared > 1) {
        throw LoadError(f.path() + ": " + k + "expert_shared_count is " + std::to_string(shared) +
                        "; tensorfold runs NemotronH with one shared expert or none");
    }
    m.shared_expert_intermediate = shared == 0 ? 0 : f.count(k + "expert_shared_feed_forward_length");
    m.groups = optional_count(f, k + "expert_group_count", 1);
    m.top_groups = optional_count(f, k + "expert_group_used_count", 1);
    // Absent, llama.cpp leaves the chosen weights as they are and unscaled.
    m.norm_topk_prob = f.optional_boolean(k + "expert_weights_norm").value_or(false);
    const double scale = f.optional_number(k + "expert_weights_scale").value_or(0.0);
    if (!(scale >= 0) || !std::isfinite(scale)) {
        throw LoadError(f.path() + ": " + k + "expert_weights_scale is " + std::to_string(scale) +
                        ", expected a positive scale");
    }
    m.routed_scaling_factor = scale == 0 ? 1.0f : static_cast<float>(scale);
    m.latent_size = static_cast<int32_t>(f.optional_unsigned_int(k + "moe_latent_size").value_or(0));
    if (m.experts_per_token > m.num_experts || m.num_experts > 1024 || m.experts_per_token > 256 || m.groups > 256 ||
        m.num_experts % m.groups != 0 || m.top_groups > m.groups ||
        m.experts_per_token > m.top_groups * (m.num_experts / m.groups)) {
        throw LoadError(f.path() + ": " + k + "expert_used_count " + std::to_string(m.experts_per_token) +
                        " from expert_group_used_count " + std::to_string(m.top_groups) + " of expert_group_count " +
                        std::to_string(m.groups) + " over expert_count " + std::to_string(m.num_experts) +
                        ": the groups must split the experts evenly and hold enough of them (at most 1024 experts, "
                        "256 a token, 256 groups)");
    }
}

}  // namespace

bool is_nemotron_h_arch(const std::string& arch) { return arch == "nemotron_h" || arch == "nemotron_h_moe"; }

std::string nemotron_h_name(const std::string& gguf) {
    if (gguf == "token_embd.weight") return "backbone.embeddings.weight";
    if (gguf == "output_norm.weight") return "backbone.norm_f.weight";
    if (gguf == "output.weight") return "lm_head.weight";
    const auto parts = split_layer_name(gguf);
    if (!parts) return {};
    for (const auto& [from, to] : kLayerNames) {
        if (parts->second != from) continue;
        if (parts->second.ends_with("_exps.weight")) return gguf;
        return "backbone.layers." + std::to_string(parts->first) + "." + to;
    }
    return {};
}

void read_gguf_nemotron_h(const GgufFile& f, const std::string& arch, ModelConfig& c) {
    const std::string k = arch + ".";
    c.architecture = "NemotronHForCausalLM";
    c.family = Family::nemotron_h;
    c.norm = NormKind::rms;
    c.mlp = MlpKind::relu2;
    c.rotary = false;
    c.torch_dtype = "gguf";
    c.hidden_size = f.count(k + "embedding_length");
    // A multi-token-prediction head rides as extra blocks at the end; the
    // forward does not run it, so its blocks are left out.
    const int32_t blocks = f.count(k + "block_count");
    const auto mtp = static_cast<int32_t>(f.optional_unsigned_int(k + "nextn_predict_layers").value_or(0));
    if (mtp >= blocks) throw LoadError(f.path() + ": " + k + "nextn_predict_layers leaves no layers");
    c.num_layers = blocks - mtp;
    // The converter writes 2^20 here for a model without RoPE, not the
    // directory's max_position_embeddings; serve with --ctx-size to bound it.
    c.max_position_embeddings = f.count(k + "context_length");
    c.num_heads = f.count(k + "attention.head_count");
    const char* eps_key = f.find(k + "attention.layer_norm_rms_epsilon") ? "attention.layer_norm_rms_epsilon"
                                                                         : "attention.layer_norm_epsilon";
    c.rms_norm_eps = static_cast<float>(f.number(k + eps_key));

    const GgufTensor* embed = f.find_tensor("token_embd.weight");
    if (!embed || embed->dims.size() != 2 || embed->dims[1] > INT32_MAX) {
        throw LoadError(f.path() + ": tensor token_embd.weight is missing or not a matrix");
    }
    c.vocab_size = static_cast<int32_t>(embed->dims[1]);
    c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;

    // Every tensor of the layers run must be one this mapping knows.
    for (const GgufTensor& t : f.tensors()) {
        const auto parts = split_layer_name(t.name);
        if (parts && parts->first >= c.num_layers) continue;  // the prediction head's blocks
        if (nemotron_h_name(t.name).empty()) {
            throw LoadError(t.file + ": tensor " + t.name + " is not one tensorfold's NemotronH reads" +
                            (t.name.find("exps") != std::string::npos ? " (its experts have no gate)" : ""));
        }
    }

    c.layer_kinds = layer_kinds(f, c.num_layers);
    const std::vector<int64_t> kv = per_layer(f, k + "attention.head_count_kv", c.num_layers);
    const bool kv_per_layer =
        f.find(k + "attention.head_count_kv") && f.find(k + "attention.head_count_kv")->type == GgufType::array;
    const std::vector<int64_t> ff = per_layer(f, k + "feed_forward_length", c.num_layers);
    c.num_kv_heads = 0;
    c.intermediate_size = 0;
    bool any_moe = false, any_mamba = false;
    int32_t first_attention = -1, first_mlp = -1, first_mamba = -1;
    for (int32_t i = 0; i < c.num_layers; ++i) {
        const LayerKind kind = c.layer_kinds[static_cast<size_t>(i)];
        const std::string blk = "blk." + std::to_string(i) + ".";
        const int64_t heads_kv = kv.empty() ? 0 : kv[static_cast<size_t>(i)];
        if (kind == LayerKind::attention) {
            if (first_attention < 0) first_attention = i;
            if (heads_kv <= 0 || (c.num_kv_heads != 0 && heads_kv != c.num_kv_heads)) {
                throw LoadError(
                    f.path() + ": " + k + "attention.head_count_kv is " + std::to_string(heads_kv) +
                    " at attention layer " + std::to_string(i) +
                    (c.num_kv_heads ? ", " + std::to_string(c.num_kv_heads) + " at an earlier one" : std::string()));
            }
            c.num_kv_heads = static_cast<int32_t>(heads_kv);
            for (const char* name : {"attn_k.weight", "attn_v.weight", "attn_output.weight"})
                require_tensor(f, i, name, kind);
        } else if (kv_per_layer && heads_kv != 0) {
            throw LoadError(f.path() + ": " + k + "attention.head_count_kv is " + std::to_string(heads_kv) +
                            " at layer " + std::to_string(i) + ", which has no attention (" + kind_name(kind) + ")");
        }
        if (kind == LayerKind::mlp) {
            if (first_mlp < 0) first_mlp = i;
            require_tensor(f, i, "ffn_down.weight", kind);
            const int64_t rows = static_cast<int64_t>(f.find_tensor(blk + "ffn_up.weight")->dims.back());
            if ((c.intermediate_size != 0 && rows != c.intermediate_size) ||
                (!ff.empty() && ff[static_cast<size_t>(i)] != rows)) {
                throw LoadError(f.path() + ": tensor " + blk + "ffn_up.weight has " + std::to_string(rows) + " rows; " +
                                k + "feed_forward_length and the other MLP layers must say the same");
            }
            c.intermediate_size = static_cast<int32_t>(rows);
        }
        if (kind == LayerKind::moe) {
            any_moe = true;
            for (const char* name : {"exp_probs_b.bias", "ffn_up_exps.weight", "ffn_down_exps.weight"})
                require_tensor(f, i, name, kind);
        }
        if (kind == LayerKind::mamba) {
            any_mamba = true;
            if (first_mamba < 0) first_mamba = i;
            for (const char* name :
                 {"ssm_conv1d.weight", "ssm_dt.bias", "ssm_a", "ssm_d", "ssm_norm.weight", "ssm_out.weight"}) {
                require_tensor(f, i, name, kind);
            }
        }
    }
    // Without an attention layer the directory's default is one KV head a
    // head; without an MLP layer its width is unused (1, as a directory
    // without intermediate_size reads).
    if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
    if (c.intermediate_size == 0) c.intermediate_size = 1;
    if (c.num_heads % c.num_kv_heads != 0) {
        throw LoadError(f.path() + ": " + k + "attention.head_count " + std::to_string(c.num_heads) +
                        " is not a multiple of head_count_kv " + std::to_string(c.num_kv_heads));
    }
    if (f.find(k + "attention.key_length")) {
        c.head_dim = f.count(k + "attention.key_length");
    } else if (c.hidden_size % c.num_heads == 0) {
        c.head_dim = c.hidden_size / c.num_heads;
    } else {
        throw LoadError(f.path() + ": " + k +
                        "attention.key_length is missing and embedding_length is not a multiple "
                        "of the head count");
    }
    if (f.find(k + "attention.value_length") && f.count(k + "attention.value_length") != c.head_dim) {
        throw LoadError(f.path() + ": " + k +
                        "attention.value_length differs from key_length; tensorfold needs them equal");
    }
    if (first_attention >= 0) {
        const std::string blk = "blk." + std::to_string(first_attention) + ".";
        c.qkv_bias = f.find_tensor(blk + "attn_q.bias") != nullptr;
        c.o_bias = f.find_tensor(blk + "attn_output.bias") != nullptr;
    }
    if (first_mlp >= 0) c.mlp_bias = f.find_tensor("blk." + std::to_string(first_mlp) + ".ffn_up.bias") != nullptr;
    if (any_moe) read_experts(f, k, c);

    // Mamba2: H heads (time_step_rank) of inner_size / H channels.
    if (any_mamba || f.find(k + "ssm.time_step_rank")) {
        MambaConfig& m = c.mamba;
        m.num_heads = f.count(k + "ssm.time_step_rank");
        const int32_t inner = f.count(k + "ssm.inner_size");
        m.state_size = f.count(k + "ssm.state_size");
        m.groups = f.count(k + "ssm.group_count");
        m.conv_kernel = f.count(k + "ssm.conv_kernel");
        if (inner % m.num_heads != 0 || m.num_heads % m.groups != 0) {
            throw LoadError(f.path() + ": " + k + "ssm.inner_size " + std::to_string(inner) + ", time_step_rank " +
                            std::to_string(m.num_heads) + " and group_count " + std::to_string(m.groups) +
                            " do not make whole heads in whole groups");
        }
        m.head_dim = inner / m.num_heads;
        m.conv_bias =
            first_mamba < 0 || f.find_tensor("blk." + std::to_string(first_mamba) + ".ssm_conv1d.bias") != nullptr;
        // time_step_limit has no key: the file's dt is softplus's, unclamped,
        // as llama.cpp runs it.
    }
}

void nemotron_h_view(TensorView& view, const ModelConfig& config, std::vector<std::vector<std::byte>>& copies) {
    const std::string& name = view.stored_name;
    const MambaConfig& m = config.mamba;
    auto reshape = [&](std::vector<int64_t> shape) {
        int64_t want = 1, have = 1;
        for (int64_t d : shape) want *= d;
        for (int64_t d : view.shape) have *= d;
        if (want != have) {
            throw LoadError(view.file + ": tensor " + name + " has shape " + shape_text(view.shape) + ", expected " +
                            std::to_string(want) + " values as " + shape_text(shape));
        }
        view.shape = std::move(shape);
    };
    if (name.ends_with(".ssm_d")) {
        reshape({m.num_heads});
    } else if (name.ends_with(".ssm_norm.weight")) {
        reshape({m.inner()});
    } else if (name.ends_with(".ssm_conv1d.weight")) {
        reshape({m.conv_dim(), 1, m.conv_kernel});
    } else if (name.ends_with(".ssm_a")) {
        reshape({m.num_heads});
        if (view.dtype != DType::f32 || view.bytes != static_cast<size_t>(m.num_heads) * 4) {
            throw LoadError(view.file + ": tensor " + name + " is " + view.dtype_text + "; tensorfold reads A in F32");
        }
        std::vector<std::byte>& copy = copies.emplace_back(view.bytes);
        for (int32_t h = 0; h < m.num_heads; ++h) {
            float a;
            std::memcpy(&a, view.data + 4 * h, 4);
            if (!(a < 0) || !std::isfinite(a)) {
                throw LoadError(view.file + ": tensor " + name + " holds A = " + std::to_string(a) + " at head " +
                                std::to_string(h) + ", which is -exp(A_log) of no A_log");
            }
            const double exact = std::log(-static_cast<double>(a));
            const float a_log = nearest_bf16_if_within_rounding(exact);
            std::memcpy(copy.data() + 4 * h, &a_log, 4);
        }
        view.data = copy.data();
        view.dtype_text = "F32 (log(-A) of the file's A)";
    }
}

}  // namespace tf::model
