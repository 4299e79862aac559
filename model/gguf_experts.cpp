#include "model/gguf_experts.h"

#include <cstdint>
#include <cstring>
#include <optional>

#include "model/load_error.h"
#include "model/quant_blocks.h"

namespace tf::model {

namespace {

// The per-layer tensors of a sparse layer that the forward reads; any other
// layer tensor that speaks of experts is a variant it does not run.
constexpr const char* kExpertTensors[] = {
    "ffn_gate_inp.weight",  "ffn_gate_exps.weight",    "ffn_up_exps.weight",
    "ffn_down_exps.weight", "ffn_gate_up_exps.weight",
};
constexpr const char* kDenseTensors[] = {"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"};

// llama.cpp's gating function numbers (gguf-py ExpertGatingFuncType).
constexpr uint64_t kSoftmaxGating = 1;


// "blk.12.ffn_up_exps.weight" -> {"12", "ffn_up_exps.weight"}; nullopt for
// a name outside the layers.
std::optional<std::pair<std::string, std::string>> split_layer_name(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return std::nullopt;
    const size_t dot = name.find('.', 4);
    if (dot == std::string::npos || dot == 4) return std::nullopt;
    return std::pair{name.substr(4, dot - 4), name.substr(dot + 1)};
}

bool names_experts(const std::string& rest) {
    return rest.find("exp") != std::string::npos || rest.find("gate_inp") != std::string::npos;
}

void refuse_variants(const GgufFile& f, const std::string& k) {
    if (auto g = f.optional_unsigned_int(k + "expert_gating_func"); g && *g != kSoftmaxGating) {
        throw LoadError(f.path() + ": " + k + "expert_gating_func is " + std::to_string(*g) +
                        "; a qwen3moe router is a softmax (1), and tensorfold runs no other for this architecture");
    }
    if (auto groups = f.optional_unsigned_int(k + "expert_group_count"); groups && *groups > 1) {
        throw LoadError(f.path() + ": " + k + "expert_group_count is " + std::to_string(*groups) +
                        "; group-limited routing is not supported for qwen3moe");
    }
    for (const char* key : {"expert_shared_count", "expert_shared_feed_forward_length"}) {
        if (auto n = f.optional_unsigned_int(k + key); n && *n > 0) {
            throw LoadError(f.path() + ": " + k + key + " is " + std::to_string(*n) +
                            "; shared experts are not supported for qwen3moe");
        }
    }
    // llama.cpp leaves Qwen3-MoE's routing weights unscaled (0 and 1 both
    // mean no scale there); a file asking for a scale is another model.
    if (auto scale = f.optional_number(k + "expert_weights_scale"); scale && *scale != 0.0 && *scale != 1.0) {
        throw LoadError(f.path() + ": " + k + "expert_weights_scale is " + std::to_string(*scale) +
                        "; scaled routing weights are not supported for qwen3moe");
    }
    for (const GgufTensor& t : f.tensors()) {
        const auto parts = split_layer_name(t.name);
        if (!parts || !names_experts(parts->second)) continue;
        bool known = false;
        for (const char* name : kExpertTensors) known = known || parts->second == name;
        if (!known) {
            throw LoadError(t.file + ": tensor " + t.name +
                            " is not one tensorfold's Qwen3-MoE reads (shared experts, " +
                            "router or expert biases and per-expert scales are not supported)");
        }
    }
}

}  // namespace

void read_gguf_experts(const GgufFile& f, const std::string& arch, ModelConfig& c) {
    const std::string k = arch + ".";
    MoeConfig& m = c.moe;
    m.router = RouterKind::softmax;
    m.num_experts = f.count(k + "expert_count");
    m.experts_per_token = f.count(k + "expert_used_count");
    if (m.experts_per_token > m.num_experts) {
        throw LoadError(f.path() + ": " + k + "expert_used_count " + std::to_string(m.experts_per_token) +
                        " is more than expert_count " + std::to_string(m.num_experts));
    }
    // Without the key llama.cpp takes feed_forward_length / expert_used_count.
    if (f.find(k + "expert_feed_forward_length")) {
        m.expert_intermediate = f.count(k + "expert_feed_forward_length");
    } else {
        m.expert_intermediate = c.intermediate_size / m.experts_per_token;
        if (m.expert_intermediate == 0) {
            throw LoadError(f.path() + ": " + k +
                            "expert_feed_forward_length is missing and feed_forward_length / "
                            "expert_used_count is 0");
        }
    }
    // llama.cpp divides a qwen3moe token's top-k weights by their sum
    // whatever the file says (its converter writes no key for it; the
    // released Qwen3-MoE checkpoints set norm_topk_prob true). A file that
    // does state expert_weights_norm is taken at its word.
    m.norm_topk_prob = f.optional_boolean(k + "expert_weights_norm").value_or(true);
    refuse_variants(f, k);

    // Which layers are sparse, from their tensors: llama.cpp's qwen3moe
    // wants a router in every layer (its converter cannot write the dense
    // layers of mlp_only_layers), but a file with dense layers is one the
    // forward runs, so a layer with ffn_gate/up/down and no router is read
    // as dense.
    const uint64_t leading_dense = f.optional_unsigned_int(k + "leading_dense_block_count").value_or(0);
    c.sparse_layers.assign(static_cast<size_t>(c.num_layers), false);
    for (int32_t i = 0; i < c.num_layers; ++i) {
        const std::string blk = "blk." + std::to_string(i) + ".";
        const bool router = f.find_tensor(blk + "ffn_gate_inp.weight") != nullptr;
        std::string dense;
        for (const char* name : kDenseTensors) {
            if (dense.empty() && f.find_tensor(blk + name)) dense = blk + name;
        }
        if (router && !dense.empty()) {
            throw LoadError(f.path() + ": layer " + std::to_string(i) + " has both a router (" + blk +
                            "ffn_gate_inp.weight) and a dense MLP (" + dense + ")");
        }
        if (!router && dense.empty()) {
            throw LoadError(f.path() + ": tensor " + blk + "ffn_gate_inp.weight is missing (layer " +
                            std::to_string(i) + " has neither experts nor a dense MLP)");
        }
        if (router && static_cast<uint64_t>(i) < leading_dense) {
            throw LoadError(f.path() + ": " + k + "leading_dense_block_count is " + std::to_string(leading_dense) +
                            " but layer " + std::to_string(i) + " has a router (" + blk + "ffn_gate_inp.weight)");
        }
        if (!router) continue;
        c.sparse_layers[static_cast<size_t>(i)] = true;
        const bool fused = f.find_tensor(blk + "ffn_gate_up_exps.weight") != nullptr;
        const bool gate = f.find_tensor(blk + "ffn_gate_exps.weight") != nullptr;
        const bool up = f.find_tensor(blk + "ffn_up_exps.weight") != nullptr;
        if (fused && (gate || up)) {
            throw LoadError(f.path() + ": layer " + std::to_string(i) + " has " + blk + "ffn_gate_up_exps.weight and " +
                            blk + (gate ? "ffn_gate_exps" : "ffn_up_exps") + ".weight: two copies of its experts");
        }
        for (const char* name : {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"}) {
            const bool in_fused = fused && std::strcmp(name, "ffn_down_exps.weight") != 0;
            if (!in_fused && !f.find_tensor(blk + name)) {
                throw LoadError(f.path() + ": tensor " + blk + name + " is missing (layer " + std::to_string(i) +
                                " has a router)");
            }
        }
    }
}

bool is_stacked_experts(const std::string& gguf_name) {
    const auto parts = split_layer_name(gguf_name);
    if (!parts) return false;
    const std::string& rest = parts->second;
    return rest == "ffn_gate_exps.weight" || rest == "ffn_up_exps.weight" || rest == "ffn_down_exps.weight" ||
           rest == "ffn_gate_up_exps.weight";
}

void add_expert_views(const TensorView& stacked, const ModelConfig& config, std::map<std::string, TensorView>& out) {
    const std::string& name = stacked.stored_name;
    const auto parts = split_layer_name(name);
    const std::string layer = parts->first, rest = parts->second;
    const int64_t experts = config.moe.num_experts;
    if (stacked.shape.size() != 3 || stacked.shape[0] != experts) {
        throw LoadError(stacked.file + ": tensor " + name + " has shape " + shape_text(stacked.shape) + ", expected [" +
                        std::to_string(experts) + ", rows, cols]: one matrix for each of expert_count's experts");
    }
    const int64_t rows = stacked.shape[1], cols = stacked.shape[2];
    const size_t expert_bytes = stacked.bytes / static_cast<size_t>(experts);
    const bool fused = rest == "ffn_gate_up_exps.weight";
    if (rows <= 0 || stacked.bytes % static_cast<size_t>(experts) != 0 ||
        expert_bytes % static_cast<size_t>(rows) != 0 || (fused && rows % 2 != 0)) {
        throw LoadError(stacked.file + ": tensor " + name + " of shape " + shape_text(stacked.shape) + " holds " +
                        std::to_string(stacked.bytes) + " bytes, which do not split into " + std::to_string(experts) +
                        " experts of whole rows" + (fused ? " (an even number: gate, then up)" : ""));
    }
    const size_t row_bytes = expert_bytes / static_cast<size_t>(rows);
    // Where the loader looks for them: a decoder layer's mlp, a NemotronH mixer.
    const std::string experts_path = config.family == Family::nemotron_h
                                         ? "backbone.layers." + layer + ".mixer.experts."
                                         : "model.layers." + layer + ".mlp.experts.";
    auto add = [&](int64_t e, const char* proj, int64_t first_row, int64_t count) {
        TensorView v = stacked;
        v.name = experts_path + std::to_string(e) + "." + proj + ".weight";
        v.stored_name = name + ", expert " + std::to_string(e) + (fused ? std::string(", ") + proj : std::string());
        v.shape = {count, cols};
        v.data = stacked.data + static_cast<size_t>(e) * expert_bytes + static_cast<size_t>(first_row) * row_bytes;
        v.bytes = static_cast<size_t>(count) * row_bytes;
        if (!out.emplace(v.name, v).second) throw LoadError(stacked.file + ": tensor " + v.name + " is given twice");
    };
    const char* proj = rest == "ffn_gate_exps.weight" ? "gate_proj"
                       : rest == "ffn_up_exps.weight" ? "up_proj"
                                                      : "down_proj";
    for (int64_t e = 0; e < experts; ++e) {
        if (fused) {
            // The converter's fused form: each expert's gate rows, then its up rows.
            add(e, "gate_proj", 0, rows / 2);
            add(e, "up_proj", rows / 2, rows / 2);
        } else {
            add(e, proj, 0, rows);
        }
    }
}

TensorView router_in_f32(TensorView router, std::vector<std::vector<std::byte>>& copies) {
    if (router.dtype == DType::f32) return router;
    const std::string named = router.stored_name + " (the router)";
    if (router.shape.size() != 2) {
        throw LoadError(router.file + ": tensor " + named + " has shape " + shape_text(router.shape) +
                        ", expected a matrix");
    }
    const int64_t rows = router.shape[0], cols = router.shape[1];
    std::vector<std::byte>& copy = copies.emplace_back(static_cast<size_t>(rows * cols) * sizeof(float));
    auto* out = reinterpret_cast<float*>(copy.data());
    if (router.quant) {
        const size_t row_bytes = quant_row_bytes(*router.quant, cols);
        if (router.bytes != row_bytes * static_cast<size_t>(rows)) {
            throw LoadError(router.file + ": tensor " + named + " holds " + std::to_string(router.bytes) +
                            " bytes, not " + std::to_string(rows) + " rows of " + std::to_string(row_bytes));
        }
        for (int64_t r = 0; r < rows; ++r) {
            dequantize_row(*router.quant, router.data + static_cast<size_t>(r) * row_bytes, cols, out + r * cols);
        }
    } else if (router.dtype == DType::bf16 || router.dtype == DType::f16) {
        if (router.bytes != static_cast<size_t>(rows * cols) * 2) {
            throw LoadError(router.file + ": tensor " + named + " holds " + std::to_string(router.bytes) +
                            " bytes, not " + std::to_string(rows * cols) + " 16-bit weights");
        }
        for (int64_t i = 0; i < rows * cols; ++i) {
            uint16_t bits;
            std::memcpy(&bits, router.data + 2 * i, 2);
            out[i] = router.dtype == DType::bf16 ? bf16_to_float(bits) : half_to_float(bits);
        }
    } else {
        throw LoadError(router.file + ": tensor " + named + " has type " + router.dtype_text +
                        ", which tensorfold cannot read (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)");
    }
    router.dtype_text = "F32 (from " + router.dtype_text + ")";
    router.dtype = DType::f32;
    router.quant.reset();
    router.data = copy.data();
    router.bytes = copy.size();
    return router;
}

}  // namespace tf::model
