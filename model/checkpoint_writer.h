// Writes a Hugging Face model directory with seeded random weights:
// config.json, generation_config.json, model.safetensors (or shards and
// model.safetensors.index.json), and a tokenizer copied from another
// directory. Used by tools/make_checkpoint and by the tests, whose fixtures
// name a spec and a seed instead of committing weights.
//
// Weights are a pure function of (seed, tensor name, element index):
// SplitMix64, so every machine writes the same bytes. Never zero.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace tf::model {

struct CheckpointSpec {
    // or MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, NemotronHForCausalLM,
    // NemotronForCausalLM
    std::string architecture = "LlamaForCausalLM";
    int32_t hidden_size = 64;
    int32_t num_layers = 2;
    int32_t num_heads = 4;
    int32_t num_kv_heads = 2;
    int32_t head_dim = 16;
    int32_t intermediate_size = 96;
    int32_t vocab_size = 256;
    int32_t max_position_embeddings = 2048;
    bool tie_word_embeddings = false;
    bool attention_bias = false;   // Llama/Qwen3 attention_bias (Qwen2 always has q/k/v bias)
    double rope_theta = 10000.0;
    bool rope_parameters = false;  // write rope_theta inside "rope_parameters" (transformers 5) instead of top level
    bool llama3_rope_scaling = false;
    int32_t sliding_window = 0;    // Mistral; 0 = null
    std::vector<int32_t> eos_token_ids = {1};
    DType dtype = DType::bf16;
    int32_t shards = 1;            // > 1: model-0000i-of-0000n.safetensors + index
    uint64_t seed = 1;
    // NemotronH only: one character per layer (M Mamba2, * attention, - MLP,
    // E experts); its length is num_hidden_layers, whatever num_layers says.
    std::string hybrid_pattern = "M-M*M-";
    int32_t mamba_heads = 8, mamba_head_dim = 8, ssm_state_size = 16, mamba_groups = 2, conv_kernel = 4;
    // Nemotron only: the share of each q/k head that is rotated.
    double partial_rotary_factor = 0.5;
    // The experts of Qwen3-MoE's sparse layers and NemotronH's E layers.
    // Qwen3-MoE: layer i's MLP is the experts unless i is in mlp_only_layers
    // or (i + 1) % decoder_sparse_step != 0; a dense layer keeps
    // intermediate_size.
    int32_t num_experts = 0;          // num_experts / n_routed_experts
    int32_t experts_per_token = 0;    // num_experts_per_tok
    int32_t expert_intermediate = 0;  // moe_intermediate_size
    bool norm_topk_prob = true;
    int32_t decoder_sparse_step = 1;
    std::vector<int32_t> mlp_only_layers;
    // The transformers-5 layout: per layer one mlp.experts.gate_up_proj
    // [E, 2 * inter, hidden] (gate rows, then up rows) and one
    // mlp.experts.down_proj [E, hidden, inter] instead of 3 * E matrices
    // (NemotronH: mixer.experts.up_proj [E, inter, D] and down_proj
    // [E, D, inter]). The values are the per-expert layout's, so one seed is
    // one model in both.
    bool fused_experts = false;
    // NemotronH E layers: a sigmoid router choosing among n_group groups
    // (the topk_group best first), weights times routed_scaling_factor, an
    // always-on relu2 shared expert, and optionally a latent width D the
    // routed experts work in (0 = none: D is hidden_size).
    int32_t expert_groups = 1;  // n_group
    int32_t top_groups = 1;     // topk_group
    double routed_scaling_factor = 1.0;
    int32_t shared_expert_intermediate = 0;  // moe_shared_expert_intermediate_size
    int32_t moe_latent_size = 0;
};

struct TensorSpec {
    std::string name;
    std::vector<int64_t> shape;
};

// The tensors a checkpoint of `spec` holds, in file order. Throws
// std::invalid_argument for a NemotronH pattern that is empty or holds
// anything but M, *, - and E, and for experts that cannot be (none, k
// outside 1..E, a dense layer index outside the model; NemotronH: groups
// that do not divide the experts or hold fewer than 2, k beyond the chosen
// groups' experts, no shared expert).
std::vector<TensorSpec> checkpoint_tensors(const CheckpointSpec& spec);

// "tiny-llama", "tiny-qwen2", "tiny-qwen3", "tiny-qwen3-moe", "tiny-mistral",
// "tiny-nemotron-h", "tiny-nemotron-h-moe", "tiny-nemotron", "qwen3-8b",
// "qwen3-30b-a3b", "llama3-8b", "nemotron-h-1b", "nemotron-3-nano-4b",
// "nemotron-3-nano-30b-a3b". Throws std::invalid_argument for any other name.
CheckpointSpec preset_spec(const std::string& name);

// Where a written tensor's values come from, when not from the seed.
// fill() may run on several threads at once, on disjoint ranges.
class WeightSource {
public:
    virtual ~WeightSource() = default;
    // Elements [begin, end) of tensor t (row-major), before rounding to the
    // checkpoint's dtype.
    virtual void fill(const TensorSpec& t, uint64_t begin, uint64_t end, float* out) const = 0;
};

// Writes the directory (created if needed). tokenizer_from: a directory
// whose tokenizer files (tokenizer.json, tokenizer_config.json, ...) are
// copied; empty = none. source: the values (nullptr: checkpoint_value).
// Throws std::runtime_error on I/O failure.
void write_checkpoint(const CheckpointSpec& spec, const std::string& dir, const std::string& tokenizer_from = "",
                      const WeightSource* source = nullptr);

// The value written at element `index` of tensor `name`, before rounding to
// the checkpoint's dtype.
float checkpoint_value(const CheckpointSpec& spec, const std::string& name, const std::vector<int64_t>& shape,
                       uint64_t index);

// Qwen3-MoE: whether layer `layer`'s MLP is the experts.
bool is_sparse_layer(const CheckpointSpec& spec, int32_t layer);

uint16_t float_to_bf16(float value);  // round to nearest even
uint16_t float_to_half(float value);  // round to nearest even

}  // namespace tf::model
