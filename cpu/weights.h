// The weights of a Llama-family decoder, checked against ModelConfig and
// arranged for the CPU kernels. bf16 matrices are copied once, at load, into
// the tiled layout the matmul streams (kernels/packing.h, bf16_tiled: the
// same values, rows padded to whole tiles); f16 and f32 matrices become
// fp32 in the kernels' pair-split layout (exact: no rounding). Norm weights
// and biases become fp32 vectors. The embedding is read from the mapping.
//
// With WeightOptions::quantize every matmul weight (lm_head included) is
// quantized at load instead, from whatever the checkpoint holds, into
// GGUF's blocks (model/quant_blocks.h) in the tiles the quantized kernels
// read (kernels/quant_layout.h); a matrix whose rows do not split into that
// type's blocks takes q8_0 (rows a multiple of 32) or stays bf16, and
// summary() says how many did.
//
// Thread-safety: immutable after load(); read from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cpu/kernels/isa.h"
#include "model/model_config.h"
#include "model/quant_blocks.h"
#include "model/safetensors.h"

namespace tf::cpu {

using kernels::WeightMatrix;

// One expert of a mixture: a SwiGLU MLP (Qwen3-MoE) or a squared-ReLU one
// without a gate (NemotronH), of the experts' own inner width.
struct ExpertWeights {
    WeightMatrix w_gate;  // (expert_intermediate, hidden); absent for squared-ReLU experts
    WeightMatrix w_up;    // (expert_intermediate, hidden)
    WeightMatrix w_down;  // (hidden, expert_intermediate)
};

// One layer. A decoder layer (Llama, Qwen, Nemotron) fills the attention
// and MLP parts; a NemotronH layer fills one mixer: attention (its norm in
// attn_norm), MLP (its norm in mlp_norm) or Mamba2 (its norm in attn_norm).
struct LayerWeights {
    model::LayerKind kind = model::LayerKind::decoder;
    const float* attn_norm = nullptr;       // (hidden); LayerNorm1P: 1 + the stored weight
    const float* attn_norm_bias = nullptr;  // (hidden), LayerNorm1P only
    WeightMatrix wq;                   // (num_heads * head_dim, hidden)
    WeightMatrix wk;                   // (num_kv_heads * head_dim, hidden)
    WeightMatrix wv;                   // (num_kv_heads * head_dim, hidden)
    WeightMatrix wo;                   // (hidden, num_heads * head_dim)
    const float* q_bias = nullptr;     // (num_heads * head_dim), when config.qkv_bias
    const float* k_bias = nullptr;     // (num_kv_heads * head_dim), when config.qkv_bias
    const float* v_bias = nullptr;     // (num_kv_heads * head_dim), when config.qkv_bias
    const float* o_bias = nullptr;     // (hidden), when config.o_bias
    const float* q_norm = nullptr;     // (head_dim), when config.qk_norm
    const float* k_norm = nullptr;     // (head_dim), when config.qk_norm
    const float* mlp_norm = nullptr;   // (hidden); LayerNorm1P: 1 + the stored weight
    const float* mlp_norm_bias = nullptr;  // (hidden), LayerNorm1P only
    WeightMatrix w_gate;                   // (intermediate, hidden); absent for squared-ReLU MLPs
    WeightMatrix w_up;                 // (intermediate, hidden)
    WeightMatrix w_down;               // (hidden, intermediate)
    const float* up_bias = nullptr;    // (intermediate), when config.mlp_bias
    const float* down_bias = nullptr;  // (hidden), when config.mlp_bias

    // Experts (config.has_experts), in place of the MLP, under mlp_norm. The
    // router is fp32 whatever the checkpoint or --quantize says (exact for
    // bf16/f16 sources): which experts a token reads must not move with the
    // weight format.
    WeightMatrix router;                  // (num_experts, hidden), f32_split
    const float* router_bias = nullptr;   // (num_experts): a sigmoid router's selection bias
    std::vector<ExpertWeights> experts;   // num_experts

    // Mamba2 (kind == mamba), with H heads, inner = H * P, conv_dim and K as
    // in MambaConfig.
    WeightMatrix in_proj;                  // (inner + conv_dim + H, hidden): z, xBC, dt
    WeightMatrix out_proj;                 // (hidden, inner)
    const float* in_proj_bias = nullptr;   // (inner + conv_dim + H), when mamba.proj_bias
    const float* out_proj_bias = nullptr;  // (hidden), when mamba.proj_bias
    const float* conv_weight = nullptr;    // (conv_dim, K): tap j reads the input K-1-j positions back
    const float* conv_bias = nullptr;      // (conv_dim), when mamba.conv_bias
    const float* dt_bias = nullptr;        // (H)
    const float* A = nullptr;              // (H): -exp(A_log), computed once at load
    const float* D = nullptr;              // (H)
    const float* gated_norm = nullptr;     // (inner): the RMSNorm after the y * silu(z) gate
};

struct WeightOptions {
    std::optional<model::QuantType> quantize;  // absent: bf16 (tiled), or fp32 for f16/f32 checkpoints
    // Called from load() every few seconds of a load that has run more than
    // a few seconds, with a line saying how far it is (a quantizing load of
    // a large model takes a while); may be empty.
    std::function<void(const std::string& line)> progress;
    double progress_after_seconds = 3.0;  // the first line comes this far into the load
    double progress_every_seconds = 2.0;  // and the next ones this far apart
};

class Weights {
public:
    // DIR/config.json (+ generation_config.json) and DIR's safetensors.
    static std::unique_ptr<Weights> load(const std::string& dir, const WeightOptions& options = {});
    static std::unique_ptr<Weights> load(const model::ModelConfig& config, model::Checkpoint checkpoint,
                                         const WeightOptions& options = {});

    const model::ModelConfig& config() const { return config_; }
    const std::vector<LayerWeights>& layers() const { return layers_; }
    const float* final_norm() const { return final_norm_; }            // (hidden); LayerNorm1P: 1 + the stored weight
    const float* final_norm_bias() const { return final_norm_bias_; }  // (hidden), LayerNorm1P only
    const WeightMatrix& lm_head() const { return lm_head_; }  // (vocab, hidden); the embedding when tied

    // The embedding's row `token` as fp32 (hidden floats).
    void embed(int32_t token, float* out) const;

    // Bytes of weights the matmuls hold: every matrix, every expert.
    size_t matmul_bytes() const;
    // Bytes one token's forward reads in the matmuls (the decode roofline:
    // these bytes / memory bandwidth): matmul_bytes() but for a mixture,
    // only experts_per_token of each layer's experts (and the routers).
    size_t active_matmul_bytes() const;
    // Milliseconds load() spent rearranging matrices for the kernels (the
    // bf16 tiling, f16/f32 conversion), inside the whole load time.
    double prepare_ms() const { return prepare_ms_; }
    // The weights as the startup line states them, e.g. "bf16 weights
    // 1137 MiB, tiled in 310 ms" or "q8_0 weights 604 MiB, quantized from
    // bf16 in 2.1 s (2 matrices q8_0: rows not a multiple of 256)".
    std::string summary() const;
    // The type --quantize asked for, if any.
    const std::optional<model::QuantType>& quantized() const { return options_.quantize; }

private:
    WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols);
    // The same from a view (a slice of a 3-D expert tensor); `name` for messages.
    WeightMatrix matrix(const model::TensorView& t, const std::string& name, int64_t rows, int64_t cols);
    // An fp32 matrix whatever the source dtype and --quantize (routers).
    WeightMatrix float_matrix(const std::string& name, int64_t rows, int64_t cols);
    WeightMatrix f32_split_matrix(const model::TensorView& t, int64_t rows, int64_t cols);
    WeightMatrix quantized_matrix(const model::TensorView& t, model::QuantType type, int32_t rows, int32_t cols);
    WeightMatrix repacked_matrix(const uint8_t* gguf_rows, model::QuantType type, int32_t rows, int32_t cols,
                                 const std::string& name);
    void report_progress(const std::string& what);
    const float* vector(const std::string& name, int64_t size);
    // A tensor of any shape as fp32, each value through `transform`.
    const float* values(const std::string& name, const std::vector<int64_t>& shape, float (*transform)(float));
    const float* norm(const std::string& name, int64_t size);  // 1 + w for LayerNorm1P
    void load_attention(LayerWeights& l, const std::string& prefix);
    void load_mlp(LayerWeights& l, const std::string& prefix);
    void load_decoder_layers();
    // The router and experts under `p` ("model.layers.3.mlp."): one tensor
    // per expert and projection, or the fused 3-D forms transformers 5 saves.
    void load_experts(LayerWeights& l, const std::string& p);
    void load_nemotron_h_layers(const std::string& prefix);
    std::vector<const WeightMatrix*> matrices(bool active_experts_only = false) const;
    size_t matrix_bytes(bool active_experts_only) const;

    model::ModelConfig config_;
    model::Checkpoint checkpoint_;
    const model::TensorView* embed_ = nullptr;  // (vocab, hidden), any of bf16/f16/f32
    std::vector<LayerWeights> layers_;
    const float* final_norm_ = nullptr;
    const float* final_norm_bias_ = nullptr;
    int32_t matrices_expected_ = 0;  // for the progress lines and summary()
    WeightMatrix lm_head_;
    std::vector<std::vector<float>> owned_f32_;
    struct FreeDeleter {
        void operator()(void* p) const { std::free(p); }
    };
    std::vector<std::unique_ptr<uint8_t[], FreeDeleter>> owned_;  // 64-byte aligned: bf16 tiles, quantized rows
    double prepare_ms_ = 0;
    WeightOptions options_;
    std::string source_dtype_;   // the checkpoint's matrix dtype(s), for summary()
    int32_t fallback_q8_0_ = 0;  // matrices that took q8_0 instead of a k-quant
    int32_t fallback_bf16_ = 0;  // matrices left unquantized (rows not a multiple of 32)
    int32_t matrices_done_ = 0;
    int32_t repacked_ = 0;       // matrices that came quantized (GGUF) and were only repacked
    std::chrono::steady_clock::time_point load_start_, last_progress_;
};

}  // namespace tf::cpu
