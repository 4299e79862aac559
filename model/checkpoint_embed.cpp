#include "model/checkpoint_embed.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <vector>

#include "model/safetensors.h"

namespace tf::model {

namespace {

// The constant channel (see the header): its value in every real token's
// embedding, the final norm's weight on it, and the weight of every token
// past the small vocabulary on it. All exact in bf16. After the final norm
// the channel holds c * gain / rms, so a real logit moves by c^2 * gain /
// rms = 1 / rms and an extra token's logit is -1024 / rms; the channel adds
// c^2 = 2.4e-4 to a residual's sum of squares.
constexpr float kConstant = 1.0f / 64.0f, kConstantGain = 4096.0f, kExtraTokenWeight = -16.0f;

std::vector<float> to_floats(const TensorView& v) {
    size_t count = 1;
    for (int64_t d : v.shape) count *= static_cast<size_t>(d);
    std::vector<float> out(count);
    for (size_t i = 0; i < count; ++i) {
        if (v.dtype == DType::f32) {
            std::memcpy(&out[i], v.data + 4 * i, 4);
        } else {
            uint16_t half;
            std::memcpy(&half, v.data + 2 * i, 2);
            out[i] = v.dtype == DType::bf16 ? bf16_to_float(half) : half_to_float(half);
        }
    }
    return out;
}

std::invalid_argument refusal(const std::string& what) {
    return std::invalid_argument("cannot embed the small model: " + what);
}

}  // namespace

struct EmbeddedWeights::Plan {
    std::map<std::string, std::vector<float>> small;  // every small tensor, as fp32
    int64_t small_hidden = 0, small_inter = 0, small_q = 0, small_kv = 0, small_head_dim = 0;
    int32_t small_layers = 0, small_vocab = 0;
    int64_t large_hidden = 0;
    bool constant_channel = false;      // the large vocabulary is larger: dim large_hidden - 1 carries kConstant
    std::vector<int32_t> hidden;        // large hidden dim -> small one, or -1
    std::vector<int32_t> q_rows;        // large q row (head * h_b + d) -> small q row, or -1
    std::vector<int32_t> kv_rows;       // the same for k and v
    std::vector<int32_t> head_dims;     // large head dim -> small one, or -1 (q_norm, k_norm)
    std::vector<int32_t> inner;         // large MLP inner dim -> small one, or -1
    float hidden_norm_scale = 1.0f, k_norm_scale = 1.0f;

    const std::vector<float>& tensor(const std::string& name) const {
        auto it = small.find(name);
        if (it == small.end()) throw std::runtime_error("the small model has no tensor " + name);
        return it->second;
    }
};

EmbeddedWeights::EmbeddedWeights(const std::string& small_dir, const CheckpointSpec& large)
    : small_(load_model_config(small_dir)) {
    const ModelConfig& s = small_;
    if (s.architecture != "Qwen3ForCausalLM") throw refusal(small_dir + " is " + s.architecture + ", not Qwen3");
    if (large.architecture != "Qwen3ForCausalLM") throw refusal("the large shape is " + large.architecture);
    const bool grows = large.vocab_size > s.vocab_size;
    auto fits = [&](const char* what, int64_t small_value, int64_t large_value) {
        if (small_value > large_value) {
            throw refusal(std::string(what) + " " + std::to_string(small_value) + " exceeds the large shape's " +
                          std::to_string(large_value));
        }
    };
    fits("hidden_size (plus the one spare dim a larger vocabulary needs)", s.hidden_size + (grows ? 1 : 0),
         large.hidden_size);
    fits("num_hidden_layers", s.num_layers, large.num_layers);
    fits("intermediate_size", s.intermediate_size, large.intermediate_size);
    fits("vocab_size", s.vocab_size, large.vocab_size);
    fits("head_dim", s.head_dim, large.head_dim);
    if (large.head_dim % s.head_dim != 0 || s.head_dim % 2 != 0) {
        throw refusal("head_dim " + std::to_string(s.head_dim) + " does not divide " + std::to_string(large.head_dim));
    }
    if (s.rope_theta != large.rope_theta) throw refusal("rope_theta differs (use spec_for_embedding)");
    if (s.tie_word_embeddings != large.tie_word_embeddings) throw refusal("tie_word_embeddings differs");
    const int32_t small_group = s.num_heads / s.num_kv_heads, large_group = large.num_heads / large.num_kv_heads;
    const int32_t copies = (small_group + large_group - 1) / large_group;  // large kv heads per small one
    fits("num_key_value_heads times the copies its q heads need", int64_t{s.num_kv_heads} * copies,
         large.num_kv_heads);

    auto plan = std::make_unique<Plan>();
    Checkpoint weights = Checkpoint::open(small_dir);
    for (const auto& [name, view] : weights.tensors()) {
        if (view.dtype == DType::other) throw refusal(name + " is " + view.dtype_text + ", not bf16/f16/f32");
        plan->small[name] = to_floats(view);
    }
    plan->small_hidden = s.hidden_size;
    plan->small_inter = s.intermediate_size;
    plan->small_head_dim = s.head_dim;
    plan->small_q = int64_t{s.num_heads} * s.head_dim;
    plan->small_kv = int64_t{s.num_kv_heads} * s.head_dim;
    plan->small_layers = s.num_layers;
    plan->small_vocab = s.vocab_size;
    plan->large_hidden = large.hidden_size;
    plan->constant_channel = grows;

    plan->hidden.assign(large.hidden_size, -1);
    for (int32_t d = 0; d < s.hidden_size; ++d) plan->hidden[d] = d;
    plan->inner.assign(large.intermediate_size, -1);
    for (int32_t i = 0; i < s.intermediate_size; ++i) plan->inner[i] = i;
    // RoPE turns dims (i, i + h/2) by theta^(-2i/h): the same frequency sits
    // at r * i in a head r times wider.
    const int32_t hs = s.head_dim, hb = large.head_dim, r = hb / hs;
    plan->head_dims.assign(hb, -1);
    for (int32_t i = 0; i < hs / 2; ++i) {
        plan->head_dims[r * i] = i;
        plan->head_dims[r * i + hb / 2] = i + hs / 2;
    }
    plan->q_rows.assign(static_cast<size_t>(large.num_heads) * hb, -1);
    plan->kv_rows.assign(static_cast<size_t>(large.num_kv_heads) * hb, -1);
    for (int32_t kv = 0; kv < s.num_kv_heads; ++kv) {
        for (int32_t c = 0; c < copies; ++c) {
            const int32_t large_kv = kv * copies + c;
            for (int32_t d = 0; d < hb; ++d) {
                if (plan->head_dims[d] >= 0) plan->kv_rows[large_kv * hb + d] = kv * hs + plan->head_dims[d];
            }
        }
        for (int32_t member = 0; member < small_group; ++member) {
            const int32_t small_head = kv * small_group + member;
            const int32_t large_head = (kv * copies + member / large_group) * large_group + member % large_group;
            for (int32_t d = 0; d < hb; ++d) {
                if (plan->head_dims[d] >= 0) plan->q_rows[large_head * hb + d] = small_head * hs + plan->head_dims[d];
            }
        }
    }
    plan->hidden_norm_scale = static_cast<float>(std::sqrt(double(s.hidden_size) / large.hidden_size));
    plan->k_norm_scale = static_cast<float>(std::sqrt(double(hs) / hb));
    plan_ = std::move(plan);
}

EmbeddedWeights::~EmbeddedWeights() = default;

void EmbeddedWeights::fill(const TensorSpec& t, uint64_t begin, uint64_t end, float* out) const {
    const Plan& p = *plan_;
    const std::string& name = t.name;
    const int64_t cols = t.shape.back();
    // A matrix: small rows and columns through two maps.
    auto matrix = [&](const std::vector<float>& from, int64_t from_cols, const std::vector<int32_t>& rows,
                      const std::vector<int32_t>& columns) {
        for (uint64_t i = begin; i < end; ++i) {
            const int64_t row = static_cast<int64_t>(i) / cols, col = static_cast<int64_t>(i) % cols;
            const int32_t sr = rows[row], sc = columns[col];
            out[i - begin] = sr >= 0 && sc >= 0 ? from[static_cast<size_t>(sr) * from_cols + sc] : 0.0f;
        }
    };
    // A vector: its small elements through one map, scaled.
    auto vector = [&](const std::vector<float>& from, const std::vector<int32_t>& map, float scale) {
        for (uint64_t i = begin; i < end; ++i) out[i - begin] = map[i] >= 0 ? from[map[i]] * scale : 0.0f;
    };

    if (name == "model.embed_tokens.weight" || name == "lm_head.weight") {
        const std::vector<float>& from = p.tensor(name);
        std::vector<int32_t> tokens(t.shape[0], -1);
        for (int32_t v = 0; v < p.small_vocab; ++v) tokens[v] = v;
        matrix(from, p.small_hidden, tokens, p.hidden);
        if (!p.constant_channel) return;
        for (uint64_t i = begin; i < end; ++i) {
            const int64_t row = static_cast<int64_t>(i) / cols, col = static_cast<int64_t>(i) % cols;
            if (col == p.large_hidden - 1) out[i - begin] = row < p.small_vocab ? kConstant : kExtraTokenWeight;
        }
        return;
    }
    if (name == "model.norm.weight") {
        vector(p.tensor(name), p.hidden, p.hidden_norm_scale);
        const uint64_t channel = static_cast<uint64_t>(p.large_hidden - 1);
        if (p.constant_channel && channel >= begin && channel < end) out[channel - begin] = kConstantGain;
        return;
    }
    const std::string prefix = "model.layers.";
    if (name.compare(0, prefix.size(), prefix) != 0) throw std::runtime_error("cannot embed tensor " + name);
    const size_t dot = name.find('.', prefix.size());
    const int32_t layer = std::stoi(name.substr(prefix.size(), dot - prefix.size()));
    const std::string part = name.substr(dot + 1);
    if (layer >= p.small_layers) {  // a layer the small model does not have: adds nothing
        std::fill(out, out + (end - begin), 0.0f);
        return;
    }
    const std::vector<float>& from = p.tensor(name);
    if (part == "input_layernorm.weight" || part == "post_attention_layernorm.weight") {
        vector(from, p.hidden, p.hidden_norm_scale);
    } else if (part == "self_attn.q_norm.weight") {
        vector(from, p.head_dims, 1.0f);
    } else if (part == "self_attn.k_norm.weight") {
        vector(from, p.head_dims, p.k_norm_scale);
    } else if (part == "self_attn.q_proj.weight") {
        matrix(from, p.small_hidden, p.q_rows, p.hidden);
    } else if (part == "self_attn.k_proj.weight" || part == "self_attn.v_proj.weight") {
        matrix(from, p.small_hidden, p.kv_rows, p.hidden);
    } else if (part == "self_attn.o_proj.weight") {
        matrix(from, p.small_q, p.hidden, p.q_rows);
    } else if (part == "mlp.gate_proj.weight" || part == "mlp.up_proj.weight") {
        matrix(from, p.small_hidden, p.inner, p.hidden);
    } else if (part == "mlp.down_proj.weight") {
        matrix(from, p.small_inter, p.hidden, p.inner);
    } else {
        throw std::runtime_error("cannot embed tensor " + name);
    }
}

CheckpointSpec spec_for_embedding(const ModelConfig& small, CheckpointSpec large) {
    large.rope_theta = small.rope_theta;
    large.eos_token_ids = small.eos_token_ids;
    large.max_position_embeddings = std::max(large.max_position_embeddings, small.max_position_embeddings);
    large.tie_word_embeddings = small.tie_word_embeddings;
    return large;
}

}  // namespace tf::model
