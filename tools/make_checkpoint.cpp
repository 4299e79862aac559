// make-checkpoint: writes a Hugging Face model directory with seeded random
// weights (never zeros) for a given architecture and shape -- tiny ones for
// tests, Qwen3-8B / Llama-3-8B / Nemotron-H shapes for GPU benchmarks -- with
// a tokenizer copied from another directory.
//
//   make-checkpoint --preset tiny-qwen3 --seed 7 --out /tmp/m
//   make-checkpoint --preset qwen3-8b --tokenizer-from models/tinycode --out /data/q8b
//   make-checkpoint --preset nemotron-3-nano-4b --out /data/nano4b
//       (NVIDIA-Nemotron-3-Nano-4B's shape: hidden 3136, 42 layers
//        "M-M-M-MM-M-M*-M-M*-M-M-M*-M-M-MM*-MMM-M-M-", 96 Mamba2 heads of 80)
//   make-checkpoint --preset tiny-nemotron-h --pattern "MM*-M" --mamba-heads 4 --groups 1 --out /tmp/h
//   make-checkpoint --preset tiny-qwen3-moe --experts 16 --experts-per-token 4 --mlp-only-layers 0,2
//       --fused-experts --out /tmp/moe
//   make-checkpoint --preset qwen3-30b-a3b --out /data/q30b  (Qwen3-30B-A3B's shape, 128 experts, top-8)
//   make-checkpoint --preset tiny-nemotron-h-moe --moe-latent 32 --out /tmp/hm  (NemotronH E layers, latent)
//   make-checkpoint --preset nemotron-3-nano-30b-a3b --out /data/nano30b
//   make-checkpoint --preset tiny-qwen3 --hidden 1024 --layers 28 --heads 16 --kv-heads 8 --head-dim 128
//       --intermediate 3072 --vocab 151936 --tied true --embed models/tinycode --out /tmp/q06b-tinycode
//       (the Qwen3-0.6B shape, its weights tinycode's, zeros elsewhere: model/checkpoint_embed.h)
//   make-checkpoint --arch LlamaForCausalLM --hidden 128 --layers 2 --heads 4 --kv-heads 2
//       --head-dim 32 --intermediate 256 --vocab 512 --dtype f16 --shards 2 --out /tmp/l
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <memory>
#include <sstream>

#include "model/checkpoint_embed.h"
#include "model/checkpoint_writer.h"

namespace {

// "1,3" -> {1, 3}; "" -> {}. False for anything but comma-separated
// non-negative integers.
bool parse_layer_list(const std::string& text, std::vector<int32_t>& layers) {
    layers.clear();
    if (text.empty()) return true;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 9) return false;
        layers.push_back(std::stoi(item));
    }
    return text.back() != ',';
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Write a Hugging Face model directory with seeded random weights", "make-checkpoint"};
    std::string preset = "tiny-llama", out, tokenizer_from, dtype = "bf16", rope_scaling = "none";
    tf::model::CheckpointSpec flags;
    app.add_option("--preset", preset,
                   "Starting shape: tiny-llama, tiny-mistral, tiny-qwen2, tiny-qwen3, tiny-qwen3-moe, tiny-nemotron-h, "
                   "tiny-nemotron-h-moe, tiny-nemotron, qwen3-8b, qwen3-30b-a3b (Qwen3-30B-A3B: 48 layers of 128 "
                   "experts, top-8), llama3-8b, nemotron-h-1b, nemotron-3-nano-4b (NVIDIA-Nemotron-3-Nano-4B: hidden "
                   "3136, 42 layers of 21 Mamba2, 17 MLP, 4 attention), nemotron-3-nano-30b-a3b (52 layers of 23 "
                   "Mamba2, 23 MoE with 128 experts, 6 attention)")
        ->capture_default_str();
    app.add_option("--out", out, "Directory to write (created)")->required();
    app.add_option("--tokenizer-from", tokenizer_from, "Copy tokenizer.json and friends from this directory");
    auto* arch =
        app.add_option("--arch", flags.architecture,
                       "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
                       "Qwen3MoeForCausalLM, NemotronHForCausalLM or NemotronForCausalLM")
            ->check(CLI::IsMember({"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
                                   "Qwen3MoeForCausalLM", "NemotronHForCausalLM", "NemotronForCausalLM"}));
    auto* hidden = app.add_option("--hidden", flags.hidden_size, "hidden_size")->check(CLI::PositiveNumber);
    auto* layers = app.add_option("--layers", flags.num_layers, "num_hidden_layers")->check(CLI::PositiveNumber);
    auto* heads = app.add_option("--heads", flags.num_heads, "num_attention_heads")->check(CLI::PositiveNumber);
    auto* kv_heads = app.add_option("--kv-heads", flags.num_kv_heads, "num_key_value_heads")->check(CLI::PositiveNumber);
    auto* head_dim = app.add_option("--head-dim", flags.head_dim, "head_dim")->check(CLI::PositiveNumber);
    auto* inter = app.add_option("--intermediate", flags.intermediate_size, "intermediate_size")->check(CLI::PositiveNumber);
    auto* vocab = app.add_option("--vocab", flags.vocab_size, "vocab_size")->check(CLI::PositiveNumber);
    auto* tied = app.add_option("--tied", flags.tie_word_embeddings, "tie_word_embeddings (true/false)");
    auto* bias = app.add_option("--attention-bias", flags.attention_bias,
                                "attention_bias for Llama/Qwen3/Nemotron (true/false)");
    auto* theta = app.add_option("--rope-theta", flags.rope_theta, "rope_theta");
    auto* window = app.add_option("--sliding-window", flags.sliding_window, "Mistral sliding_window (0: none)");
    auto* shards = app.add_option("--shards", flags.shards, "Safetensors files (> 1: sharded with an index)")
                       ->check(CLI::Range(1, 1000));
    auto* seed = app.add_option("--seed", flags.seed, "Random seed: same seed and shape, same bytes");
    auto* pattern =
        app.add_option("--pattern", flags.hybrid_pattern,
                       "NemotronH hybrid_override_pattern: M Mamba2, * attention, - MLP, E experts, one per layer");
    auto* mamba_heads =
        app.add_option("--mamba-heads", flags.mamba_heads, "NemotronH mamba_num_heads")->check(CLI::PositiveNumber);
    auto* mamba_head_dim = app.add_option("--mamba-head-dim", flags.mamba_head_dim, "NemotronH mamba_head_dim")
                               ->check(CLI::PositiveNumber);
    auto* ssm_state =
        app.add_option("--ssm-state", flags.ssm_state_size, "NemotronH ssm_state_size")->check(CLI::PositiveNumber);
    auto* groups = app.add_option("--groups", flags.mamba_groups, "NemotronH n_groups")->check(CLI::PositiveNumber);
    auto* conv_kernel =
        app.add_option("--conv-kernel", flags.conv_kernel, "NemotronH conv_kernel")->check(CLI::PositiveNumber);
    auto* partial_rotary = app.add_option("--partial-rotary", flags.partial_rotary_factor,
                                          "Nemotron partial_rotary_factor: rotated share of each q/k head")
                               ->check(CLI::Range(0.0, 1.0));
    auto* experts = app.add_option("--experts", flags.num_experts, "num_experts (NemotronH: n_routed_experts)")
                        ->check(CLI::PositiveNumber);
    auto* experts_per_token =
        app.add_option("--experts-per-token", flags.experts_per_token, "num_experts_per_tok (the k of the top-k)")
            ->check(CLI::PositiveNumber);
    auto* expert_inter = app.add_option("--expert-intermediate", flags.expert_intermediate,
                                        "moe_intermediate_size (one expert's inner width)")
                             ->check(CLI::PositiveNumber);
    auto* norm_topk = app.add_option("--norm-topk-prob", flags.norm_topk_prob,
                                     "norm_topk_prob: divide the chosen weights by their sum (true/false)");
    auto* expert_groups =
        app.add_option("--expert-groups", flags.expert_groups, "NemotronH n_group")->check(CLI::PositiveNumber);
    auto* top_groups =
        app.add_option("--top-groups", flags.top_groups, "NemotronH topk_group")->check(CLI::PositiveNumber);
    auto* scaling = app.add_option("--routed-scaling", flags.routed_scaling_factor, "NemotronH routed_scaling_factor")
                        ->check(CLI::PositiveNumber);
    auto* shared_inter = app.add_option("--shared-expert-intermediate", flags.shared_expert_intermediate,
                                        "NemotronH moe_shared_expert_intermediate_size")
                             ->check(CLI::PositiveNumber);
    auto* latent = app.add_option("--moe-latent", flags.moe_latent_size,
                                  "NemotronH moe_latent_size: the routed experts' width (0: none, hidden_size)")
                       ->check(CLI::NonNegativeNumber);
    auto* sparse_step = app.add_option("--decoder-sparse-step", flags.decoder_sparse_step,
                                       "Qwen3-MoE decoder_sparse_step: layer i has experts when (i + 1) % step == 0")
                            ->check(CLI::PositiveNumber);
    std::string mlp_only_layers;
    auto* mlp_only = app.add_option("--mlp-only-layers", mlp_only_layers,
                                    "Qwen3-MoE mlp_only_layers: comma-separated layers that stay dense, e.g. 1,3");
    bool fused_experts = false;
    app.add_flag("--fused-experts", fused_experts,
                 "Write each layer's experts as two stacked tensors, mlp.experts.gate_up_proj and "
                 "mlp.experts.down_proj (NemotronH: mixer.experts.up_proj and down_proj), as transformers 5 "
                 "holds them, instead of matrices per expert");
    app.add_option("--dtype", dtype, "bf16, f16 or f32")->capture_default_str()->check(CLI::IsMember({"bf16", "f16", "f32"}));
    app.add_option("--rope-scaling", rope_scaling, "none or llama3")->capture_default_str()->check(CLI::IsMember({"none", "llama3"}));
    std::string embed_from;
    app.add_option("--embed", embed_from,
                   "Instead of random weights, a trained Qwen3 model from this directory placed inside the shape "
                   "(zeros elsewhere; its tokenizer, rope_theta and eos come along): the shape's costs, the small "
                   "model's text")
        ->check(CLI::ExistingDirectory);
    int32_t max_positions = 0;
    auto* positions = app.add_option("--max-positions", max_positions, "max_position_embeddings")
                          ->check(CLI::PositiveNumber);
    bool rope_parameters = false;
    app.add_flag("--rope-parameters", rope_parameters, "Write rope_theta inside rope_parameters (transformers 5 style)");
    CLI11_PARSE(app, argc, argv);

    try {
        tf::model::CheckpointSpec spec = tf::model::preset_spec(preset);
        // Flags given on the command line override the preset.
        if (arch->count()) spec.architecture = flags.architecture;
        if (hidden->count()) spec.hidden_size = flags.hidden_size;
        if (layers->count()) spec.num_layers = flags.num_layers;
        if (heads->count()) spec.num_heads = flags.num_heads;
        if (kv_heads->count()) spec.num_kv_heads = flags.num_kv_heads;
        if (head_dim->count()) spec.head_dim = flags.head_dim;
        if (inter->count()) spec.intermediate_size = flags.intermediate_size;
        if (vocab->count()) spec.vocab_size = flags.vocab_size;
        if (tied->count()) spec.tie_word_embeddings = flags.tie_word_embeddings;
        if (bias->count()) spec.attention_bias = flags.attention_bias;
        if (theta->count()) spec.rope_theta = flags.rope_theta;
        if (window->count()) spec.sliding_window = flags.sliding_window;
        if (shards->count()) spec.shards = flags.shards;
        if (seed->count()) spec.seed = flags.seed;
        if (pattern->count()) spec.hybrid_pattern = flags.hybrid_pattern;
        if (mamba_heads->count()) spec.mamba_heads = flags.mamba_heads;
        if (mamba_head_dim->count()) spec.mamba_head_dim = flags.mamba_head_dim;
        if (ssm_state->count()) spec.ssm_state_size = flags.ssm_state_size;
        if (groups->count()) spec.mamba_groups = flags.mamba_groups;
        if (conv_kernel->count()) spec.conv_kernel = flags.conv_kernel;
        if (partial_rotary->count()) spec.partial_rotary_factor = flags.partial_rotary_factor;
        if (experts->count()) spec.num_experts = flags.num_experts;
        if (experts_per_token->count()) spec.experts_per_token = flags.experts_per_token;
        if (expert_inter->count()) spec.expert_intermediate = flags.expert_intermediate;
        if (norm_topk->count()) spec.norm_topk_prob = flags.norm_topk_prob;
        if (sparse_step->count()) spec.decoder_sparse_step = flags.decoder_sparse_step;
        if (mlp_only->count() && !parse_layer_list(mlp_only_layers, spec.mlp_only_layers)) {
            std::fprintf(stderr, "make-checkpoint: --mlp-only-layers \"%s\" is not a list like 1,3\n",
                         mlp_only_layers.c_str());
            return 2;
        }
        if (fused_experts) spec.fused_experts = true;
        if (expert_groups->count()) spec.expert_groups = flags.expert_groups;
        if (top_groups->count()) spec.top_groups = flags.top_groups;
        if (scaling->count()) spec.routed_scaling_factor = flags.routed_scaling_factor;
        if (shared_inter->count()) spec.shared_expert_intermediate = flags.shared_expert_intermediate;
        if (latent->count()) spec.moe_latent_size = flags.moe_latent_size;
        spec.dtype = dtype == "f32" ? tf::model::DType::f32 : dtype == "f16" ? tf::model::DType::f16 : tf::model::DType::bf16;
        spec.llama3_rope_scaling = rope_scaling == "llama3";
        spec.rope_parameters = rope_parameters;
        if (spec.num_heads % spec.num_kv_heads != 0) {
            std::fprintf(stderr, "make-checkpoint: --heads must be a multiple of --kv-heads\n");
            return 2;
        }
        const bool qwen3_moe = spec.architecture == "Qwen3MoeForCausalLM";
        const bool nemotron_h_moe =
            spec.architecture == "NemotronHForCausalLM" && spec.hybrid_pattern.find('E') != std::string::npos;
        const bool expert_flags = experts->count() || experts_per_token->count() || expert_inter->count() ||
                                  norm_topk->count() || fused_experts;
        const bool qwen_flags = sparse_step->count() || mlp_only->count();
        const bool nemotron_flags = expert_groups->count() || top_groups->count() || scaling->count() ||
                                    shared_inter->count() || latent->count();
        if ((expert_flags && !qwen3_moe && !nemotron_h_moe) || (qwen_flags && !qwen3_moe) ||
            (nemotron_flags && !nemotron_h_moe)) {
            const bool plain_nemotron_h = spec.architecture == "NemotronHForCausalLM" && !nemotron_h_moe;
            std::fprintf(stderr,
                         "make-checkpoint: an expert flag does not apply to %s%s (--experts, --experts-per-token, "
                         "--expert-intermediate, --norm-topk-prob and --fused-experts are for Qwen3MoeForCausalLM and "
                         "NemotronH patterns with E layers; --decoder-sparse-step and --mlp-only-layers for "
                         "Qwen3MoeForCausalLM; --expert-groups, --top-groups, --routed-scaling, "
                         "--shared-expert-intermediate and --moe-latent for NemotronH with E layers)\n",
                         spec.architecture.c_str(), plain_nemotron_h ? " without E layers" : "");
            return 2;
        }
        if (qwen3_moe && (spec.num_experts <= 0 || spec.expert_intermediate <= 0 || spec.experts_per_token <= 0 ||
                          spec.experts_per_token > spec.num_experts)) {
            std::fprintf(stderr,
                         "make-checkpoint: Qwen3MoeForCausalLM needs --experts, --expert-intermediate and "
                         "--experts-per-token between 1 and --experts (have %d, %d, %d)\n",
                         spec.num_experts, spec.expert_intermediate, spec.experts_per_token);
            return 2;
        }
        const bool nemotron_h = spec.architecture == "NemotronHForCausalLM";
        const bool nemotron = spec.architecture == "NemotronForCausalLM";
        if (nemotron_h) {
            // The pattern is the layer count; a --layers that disagrees is a mistake, not a wish.
            if (layers->count() && flags.num_layers != static_cast<int32_t>(spec.hybrid_pattern.size())) {
                std::fprintf(stderr, "make-checkpoint: --layers %d disagrees with --pattern \"%s\" (%zu layers)\n",
                             flags.num_layers, spec.hybrid_pattern.c_str(), spec.hybrid_pattern.size());
                return 2;
            }
            spec.num_layers = static_cast<int32_t>(spec.hybrid_pattern.size());
            if (spec.mamba_heads % spec.mamba_groups != 0) {
                std::fprintf(stderr, "make-checkpoint: --mamba-heads must be a multiple of --groups\n");
                return 2;
            }
        }
        if ((nemotron_h || nemotron) && (rope_scaling != "none" || rope_parameters || spec.sliding_window > 0)) {
            std::fprintf(stderr, "make-checkpoint: %s takes no --rope-scaling, --rope-parameters or --sliding-window\n",
                         spec.architecture.c_str());
            return 2;
        }
        if (nemotron && static_cast<int32_t>(spec.partial_rotary_factor * spec.head_dim) % 2 != 0) {
            std::fprintf(stderr, "make-checkpoint: --partial-rotary x --head-dim must be even\n");
            return 2;
        }
        std::unique_ptr<tf::model::EmbeddedWeights> embedded;
        if (!embed_from.empty()) {
            if (!tokenizer_from.empty() || seed->count() || theta->count()) {
                std::fprintf(stderr, "make-checkpoint: --embed brings its own tokenizer, weights and rope_theta "
                                     "(drop --tokenizer-from, --seed and --rope-theta)\n");
                return 2;
            }
            spec = tf::model::spec_for_embedding(tf::model::load_model_config(embed_from), spec);
            if (positions->count()) spec.max_position_embeddings = max_positions;
            embedded = std::make_unique<tf::model::EmbeddedWeights>(embed_from, spec);
            tokenizer_from = embed_from;
        } else if (positions->count()) {
            spec.max_position_embeddings = max_positions;
        }
        for (int32_t& id : spec.eos_token_ids) id = std::min(id, spec.vocab_size - 1);
        tf::model::write_checkpoint(spec, out, tokenizer_from, embedded.get());
        if (embedded) {
            std::printf("make-checkpoint: wrote %s (%s, the weights of %s inside)\n", out.c_str(),
                        spec.architecture.c_str(), embed_from.c_str());
            return 0;
        }
        std::printf("make-checkpoint: wrote %s (%s, seed %llu)\n", out.c_str(), spec.architecture.c_str(),
                    static_cast<unsigned long long>(spec.seed));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make-checkpoint: %s\n", e.what());
        return 1;
    }
    return 0;
}
