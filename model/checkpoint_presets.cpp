// The named shapes make-checkpoint and the tests start from: tiny ones of
// every family for tests, and the real models' shapes for memory and speed.
#include <stdexcept>
#include <string>

#include "model/checkpoint_writer.h"

namespace tf::model {

CheckpointSpec preset_spec(const std::string& name) {
    CheckpointSpec s;
    if (name == "tiny-llama") {
        s.architecture = "LlamaForCausalLM";
    } else if (name == "tiny-mistral") {
        s.architecture = "MistralForCausalLM";
        s.sliding_window = 8;
    } else if (name == "tiny-qwen2") {
        s.architecture = "Qwen2ForCausalLM";
        s.tie_word_embeddings = true;
        s.rope_theta = 1e6;
    } else if (name == "tiny-qwen3") {
        s.architecture = "Qwen3ForCausalLM";
        s.tie_word_embeddings = true;
        s.rope_theta = 1e6;
    } else if (name == "qwen3-8b") {
        s.architecture = "Qwen3ForCausalLM";
        s.hidden_size = 4096, s.num_layers = 36, s.num_heads = 32, s.num_kv_heads = 8, s.head_dim = 128;
        s.intermediate_size = 12288, s.vocab_size = 151936, s.max_position_embeddings = 40960;
        s.rope_theta = 1e6;
        s.eos_token_ids = {151645, 151643};
        s.shards = 5;
    } else if (name == "tiny-qwen3-moe") {
        // Sparse, dense, sparse: a dense layer between two expert layers
        // catches a loader that assumes every layer is alike.
        s.architecture = "Qwen3MoeForCausalLM";
        s.num_layers = 3;
        s.rope_theta = 1e6;
        s.num_experts = 8, s.experts_per_token = 2, s.expert_intermediate = 32;
        s.mlp_only_layers = {1};
    } else if (name == "qwen3-30b-a3b") {
        // Qwen3-30B-A3B's config.json: 48 layers all sparse, 128 experts of
        // 768, 8 a token; 30,532,122,624 parameters.
        s.architecture = "Qwen3MoeForCausalLM";
        s.hidden_size = 2048, s.num_layers = 48, s.num_heads = 32, s.num_kv_heads = 4, s.head_dim = 128;
        s.intermediate_size = 6144, s.vocab_size = 151936, s.max_position_embeddings = 40960;
        s.num_experts = 128, s.experts_per_token = 8, s.expert_intermediate = 768;
        s.rope_theta = 1e6;
        s.eos_token_ids = {151645, 151643};
        s.shards = 16;
    } else if (name == "llama3-8b") {
        s.architecture = "LlamaForCausalLM";
        s.hidden_size = 4096, s.num_layers = 32, s.num_heads = 32, s.num_kv_heads = 8, s.head_dim = 128;
        s.intermediate_size = 14336, s.vocab_size = 128256, s.max_position_embeddings = 8192;
        s.rope_theta = 500000.0;
        s.eos_token_ids = {128001, 128009};
        s.shards = 4;
    } else if (name == "tiny-nemotron-h") {
        s.architecture = "NemotronHForCausalLM";
        s.num_layers = static_cast<int32_t>(s.hybrid_pattern.size());
    } else if (name == "tiny-nemotron-h-moe") {
        // Every kind of layer llama.cpp's nemotron_h_moe has (no '-': its
        // per-layer feed_forward_length cannot tell a dense MLP from Mamba2),
        // two groups of 4 experts so the group step matters, and
        // --moe-latent to add the latent projections.
        s.architecture = "NemotronHForCausalLM";
        s.hybrid_pattern = "ME*EME";
        s.num_layers = static_cast<int32_t>(s.hybrid_pattern.size());
        s.num_experts = 8, s.experts_per_token = 2, s.expert_intermediate = 32, s.shared_expert_intermediate = 48;
        s.expert_groups = 2, s.top_groups = 1, s.routed_scaling_factor = 2.5;
    } else if (name == "nemotron-3-nano-30b-a3b") {
        // NVIDIA-Nemotron-3-Nano-30B-A3B's config.json: 52 layers, 23 Mamba2,
        // 23 MoE (128 experts of 1856, 6 a token, a shared expert of 3712), 6
        // attention.
        s.architecture = "NemotronHForCausalLM";
        s.hybrid_pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
        s.hidden_size = 2688, s.num_heads = 32, s.num_kv_heads = 2, s.head_dim = 128;
        s.mamba_heads = 64, s.mamba_head_dim = 64, s.ssm_state_size = 128, s.mamba_groups = 8, s.conv_kernel = 4;
        s.intermediate_size = 1856, s.vocab_size = 131072, s.max_position_embeddings = 262144;
        s.num_experts = 128, s.experts_per_token = 6, s.expert_intermediate = 1856, s.shared_expert_intermediate = 3712;
        s.routed_scaling_factor = 2.5;
        s.eos_token_ids = {2, 11};
        s.num_layers = static_cast<int32_t>(s.hybrid_pattern.size());
        s.shards = 13;
    } else if (name == "tiny-nemotron") {
        s.architecture = "NemotronForCausalLM";
    } else if (name == "nemotron-h-1b") {
        // A benchmark shape between the tiny and the real models: Nano 4B's
        // layer mix (Mamba2 and MLP alternating, a few attention layers) at
        // hidden 2048, 24 layers: 12 Mamba2, 2 attention, 10 MLP.
        s.architecture = "NemotronHForCausalLM";
        s.hybrid_pattern = "M-M-M-MM*-M-M-M*-MM-M-M-";
        s.hidden_size = 2048, s.num_heads = 16, s.num_kv_heads = 4, s.head_dim = 128;
        s.mamba_heads = 64, s.mamba_head_dim = 64, s.ssm_state_size = 128, s.mamba_groups = 8, s.conv_kernel = 4;
        s.intermediate_size = 6144, s.vocab_size = 131072, s.max_position_embeddings = 262144;
        s.eos_token_ids = {2};
        s.num_layers = static_cast<int32_t>(s.hybrid_pattern.size());
    } else if (name == "nemotron-3-nano-4b") {
        // NVIDIA-Nemotron-3-Nano-4B-BF16's config.json: 42 layers, 21 Mamba2,
        // 4 attention, 17 MLP; 3,973,556,832 parameters.
        s.architecture = "NemotronHForCausalLM";
        s.hybrid_pattern = "M-M-M-MM-M-M*-M-M*-M-M-M*-M-M-MM*-MMM-M-M-";
        s.hidden_size = 3136, s.num_heads = 40, s.num_kv_heads = 8, s.head_dim = 128;
        s.mamba_heads = 96, s.mamba_head_dim = 80, s.ssm_state_size = 128, s.mamba_groups = 8, s.conv_kernel = 4;
        s.intermediate_size = 12544, s.vocab_size = 131072, s.max_position_embeddings = 262144;
        s.eos_token_ids = {2};
        s.num_layers = static_cast<int32_t>(s.hybrid_pattern.size());
        s.shards = 2;
    } else {
        throw std::invalid_argument("unknown preset \"" + name +
                                    "\" (known: tiny-llama, tiny-mistral, tiny-qwen2, tiny-qwen3, tiny-qwen3-moe, "
                                    "tiny-nemotron-h, tiny-nemotron-h-moe, tiny-nemotron, qwen3-8b, qwen3-30b-a3b, "
                                    "llama3-8b, nemotron-h-1b, nemotron-3-nano-4b, nemotron-3-nano-30b-a3b)");
    }
    return s;
}

}  // namespace tf::model
