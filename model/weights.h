// The weights of a Llama-family decoder, checked against ModelConfig and
// arranged for the CPU kernels. bf16 matrices are copied once, at load, into
// the tiled layout the matmul streams (kernels/packing.h, bf16_tiled: the
// same values, rows padded to whole tiles); f16 and f32 matrices become
// fp32 in the kernels' pair-split layout (exact: no rounding). Norm weights
// and biases become fp32 vectors. The embedding is read from the mapping.
//
// Thread-safety: immutable after load(); read from any thread.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "model/kernels/isa.h"
#include "model/model_config.h"
#include "model/safetensors.h"

namespace tf::model {

using kernels::WeightMatrix;

struct LayerWeights {
    const float* attn_norm = nullptr;  // (hidden)
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
    const float* mlp_norm = nullptr;   // (hidden)
    WeightMatrix w_gate;               // (intermediate, hidden)
    WeightMatrix w_up;                 // (intermediate, hidden)
    WeightMatrix w_down;               // (hidden, intermediate)
};

class Weights {
public:
    // DIR/config.json (+ generation_config.json) and DIR's safetensors.
    static std::unique_ptr<Weights> load(const std::string& dir);
    static std::unique_ptr<Weights> load(const ModelConfig& config, Checkpoint checkpoint);

    const ModelConfig& config() const { return config_; }
    const std::vector<LayerWeights>& layers() const { return layers_; }
    const float* final_norm() const { return final_norm_; }  // (hidden)
    const WeightMatrix& lm_head() const { return lm_head_; }  // (vocab, hidden); the embedding when tied

    // model.embed_tokens.weight row `token` as fp32 (hidden floats).
    void embed(int32_t token, float* out) const;

    // Bytes of weights one forward pass reads in the matmuls (the decode
    // roofline: these bytes / memory bandwidth).
    size_t matmul_bytes() const;
    // Milliseconds load() spent rearranging matrices for the kernels (the
    // bf16 tiling, f16/f32 conversion), inside the whole load time.
    double prepare_ms() const { return prepare_ms_; }

private:
    WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols);
    const float* vector(const std::string& name, int64_t size);

    ModelConfig config_;
    Checkpoint checkpoint_;
    const TensorView* embed_ = nullptr;  // (vocab, hidden), any of bf16/f16/f32
    std::vector<LayerWeights> layers_;
    const float* final_norm_ = nullptr;
    WeightMatrix lm_head_;
    std::vector<std::vector<float>> owned_f32_;
    struct FreeDeleter {
        void operator()(void* p) const { std::free(p); }
    };
    std::vector<std::unique_ptr<uint16_t[], FreeDeleter>> owned_bf16_;  // 64-byte aligned tiles
    double prepare_ms_ = 0;
};

// IEEE half -> float, exact.
float half_to_float(uint16_t half);
float bf16_to_float(uint16_t bf16);

}  // namespace tf::model
