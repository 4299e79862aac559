// The CPU backend: the Backend interface (model/backend.h) over Weights,
// one KvCache per stream, a persistent ThreadPool and the SIMD kernels of
// the path and activation precision chosen at start-up (see kernels/isa.h:
// for one precision every path gives bit-identical logits).
//
// Batch invariance: every matmul output element, norm and attention
// (row, head) is one thread's fixed-order reduction that depends only on the
// model and the row's position; threads split output features and (row,
// head) pairs, never a reduction. Prefill, decode and verify run this same
// code. Tests compare logits bitwise (tests/cpu/batch_invariance_test.cpp).
//
// NemotronH's Mamba2 layers keep one RecurrentState per stream beside the
// KV cache of its attention layers; truncate rolls it back exactly
// (cpu/recurrent_state.h).
//
// Thread-safety: as Backend: one caller at a time; forward() uses the pool.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu/kernels/attention.h"
#include "cpu/kernels/isa.h"
#include "cpu/kernels/matmul.h"
#include "cpu/kernels/quant_matmul.h"
#include "cpu/kv_cache.h"
#include "cpu/moe_router.h"
#include "cpu/recurrent_state.h"
#include "cpu/thread_pool.h"
#include "cpu/weights.h"
#include "model/backend.h"

namespace tf::cpu {

class CpuBackend final : public model::Backend {
public:
    // threads: 0 = every core (hardware_concurrency). Activations default
    // to the path's own (kernels::default_activations).
    CpuBackend(std::unique_ptr<Weights> weights, int threads, kernels::Isa isa);
    CpuBackend(std::unique_ptr<Weights> weights, int threads, kernels::Isa isa, kernels::Activations activations);
    // vnni: whether quantized weights use the int8 dot product (false on a
    // CPU without it; kernels::parse_vnni). kv_type: what every stream's KV
    // cache stores (kv_format.h).
    CpuBackend(std::unique_ptr<Weights> weights, int threads, kernels::Isa isa, kernels::Activations activations,
               bool vnni, kernels::KvType kv_type = kernels::kDefaultKvType);

    const model::ModelConfig& config() const override { return weights_->config(); }
    void open_stream(model::StreamId stream, int32_t capacity) override;
    void close_stream(model::StreamId stream) override;
    int32_t stream_length(model::StreamId stream) const override;
    void truncate(model::StreamId stream, int32_t length) override;
    void copy_prefix(model::StreamId from, model::StreamId to, int32_t length) override;
    // Hands the KV over when `from` has no recurrent state and both were
    // opened with the same capacity; otherwise copies.
    bool move_prefix(model::StreamId from, model::StreamId to, int32_t length) override;
    bool holds_state_at(model::StreamId stream, int32_t length) const override;
    void keep_state_at(model::StreamId stream, int32_t length) override;
    void forward(std::span<const model::Row> rows, std::span<const model::SamplingParams> samplers,
                 model::RowOutputs& out) override;
    using model::Backend::forward;

    // Benchmarks only: `stream` (open, empty) := `length` positions of
    // made-up keys and values, finite and of the size real ones have, as if
    // a prompt that long had been read, without running the model (a 32k
    // context is minutes of prefill; attention's cost does not depend on
    // what the keys say). Throws for a model with recurrent layers, whose
    // state cannot be made up.
    void fill_stream_for_benchmark(model::StreamId stream, int32_t length);

    kernels::Isa isa() const { return kernels_->isa; }
    // Whether the quantized kernels use VPDPBUSD (only quantized weights use them).
    bool int8_dot_product() const { return quant_->vnni; }
    kernels::Activations activations() const { return kernels_->activations; }
    kernels::KvType kv_type() const { return kv_type_; }
    // Bytes of KV one position of a stream takes (0 for a model without attention layers).
    size_t kv_bytes_per_token() const;
    int threads() const { return pool_.size(); }
    // The experts the last forward read, on average over its expert layers
    // (0 for a model without experts): what a round of its rows cost.
    double experts_touched() const override {
        return expert_layers_run_ > 0 ? static_cast<double>(experts_read_) / expert_layers_run_ : 0.0;
    }
    const Weights& weights() const { return *weights_; }

private:
    KvCache& cache(model::StreamId stream);
    const KvCache& cache(model::StreamId stream) const;
    void check_rows(std::span<const model::Row> rows, size_t samplers);
    void attention_block(const LayerWeights& l, int32_t kv_layer, std::span<const model::Row> rows);
    void mlp_block(const LayerWeights& l, int32_t rows);
    // gate_ := silu(gate_) * up_ (or relu(up_)^2) for `rows` rows of `inter`,
    // each packed by `pack` into `packed`, packed_row bytes apart.
    void activate_and_pack(bool gated, int32_t rows, int32_t inter, kernels::PackRowsFn pack, char* packed,
                           size_t packed_row);
    // A mixture of experts (cpu_backend_moe.cpp) in place of the MLP.
    void moe_block(const LayerWeights& l, int32_t rows);
    // NemotronH's shared expert on normed_'s rows, into moe_shared_.
    void shared_expert(const LayerWeights& l, int32_t rows);
    // matmul_batches_ on the kernel `any` (one of their matrices) needs.
    void run_matmul_batches(const WeightMatrix& any);
    // NemotronH's Mamba2 mixer (cpu_backend_mamba.cpp): in_proj, the conv
    // and scan on each stream's state, the gated norm and out_proj.
    void mamba_block(const LayerWeights& l, int32_t mamba_layer, std::span<const model::Row> rows);
    // Before a forward's layers: each stream with rows starts a round of its
    // recurrent state; rows learn their stream's state and round row.
    void begin_recurrent_rounds(std::span<const model::Row> rows);
    void finish_recurrent_rounds(std::span<const model::Row> rows);
    // Replays round rows [0, rows) of `state` from its start state (a
    // rollback, or a copy that lands inside a round).
    void replay(RecurrentState& state, int32_t rows);
    RecurrentState* recurrent(model::StreamId stream) const;
    // x := the norm of the layer (RMSNorm, or LayerNorm1P with `bias`).
    void norm_row(const float* x, const float* weight, const float* bias, float* out) const;
    // How `w`'s kernel wants its input rows packed, and their size: the
    // float path's layout, or int8 blocks for a quantized matrix.
    kernels::PackRowsFn pack_for(const WeightMatrix& w) const;
    size_t packed_row_bytes(const WeightMatrix& w) const;
    void grow_packed(int32_t rows, const WeightMatrix& w);
    // split_ := `rows` rows of x (k values, ldx apart) packed for `consumer`,
    // rows spread over the threads (each row's bytes are its own).
    void pack_rows_for(const WeightMatrix& consumer, const float* x, int32_t rows, int32_t k, int32_t ldx);
    // The jobs (all float or all quantized) on the M rows packed in split_.
    void run_matmul(int32_t M, std::initializer_list<kernels::MatmulJob> jobs);
    // normed_ := RMSNorm(x_) with `norm_weight`, and split_ := its rows
    // packed for `consumer` (the first matrix that reads them).
    void norm_and_pack(const float* norm_weight, const float* norm_bias, const WeightMatrix& consumer, int32_t rows);

    std::unique_ptr<Weights> weights_;
    const kernels::KernelTable* kernels_;
    const kernels::QuantKernels* quant_;
    ThreadPool pool_;
    kernels::KvType kv_type_;
    std::vector<float> inv_freq_;
    std::unordered_map<model::StreamId, std::unique_ptr<KvCache>> streams_;
    // Streams' Mamba2 states, when the model has Mamba layers.
    std::unordered_map<model::StreamId, std::unique_ptr<RecurrentState>> recurrent_;
    std::vector<int32_t> kv_layer_;     // per layer: its index in the KV caches, or -1
    std::vector<int32_t> mamba_layer_;  // per layer: its index in the recurrent states, or -1
    std::vector<KvCache*> row_caches_;  // per row of the current forward
    std::vector<RecurrentState*> row_states_;        // per row, when recurrent
    std::vector<int32_t> row_round_;                 // per row: its row of its stream's round
    std::vector<std::vector<int32_t>> stream_rows_;  // per stream of the forward: its rows, in order

    // Scratch, per row: sized on demand, kept between calls.
    std::vector<float> x_, normed_, split_, q_, k_, v_, attn_, out_, gate_, up_, cos_, sin_;
    std::vector<float> proj_, xbc_, dt_, y_;  // Mamba2: in_proj output, conv output, time steps, scan output
    kernels::AttentionScratch attention_scratch_;
    // Mixture of experts: router logits, each row's choices, the slots
    // (row, expert) grouped by expert, and their packed inputs and outputs.
    std::vector<float> router_logits_, moe_rows_, moe_in_, moe_down_in_, moe_out_, moe_sum_, moe_latent_, moe_shared_;
    std::vector<ExpertChoice> routes_;
    std::vector<int32_t> expert_first_, expert_next_, route_slot_, slot_row_;
    std::vector<kernels::MatmulBatch> matmul_batches_;
    std::vector<kernels::MatmulUnit> matmul_units_;
    int64_t experts_read_ = 0;      // distinct experts summed over the expert layers of the last forward
    int32_t expert_layers_run_ = 0;
    std::vector<kernels::AttentionRow> attention_rows_;
    std::vector<float> logits_;        // output rows' logits when some only sample
    std::vector<int32_t> output_rows_;  // per output row: its index in the forward
};

// The kernels TF_ISA, TF_ACTIVATIONS and TF_VNNI choose (each "auto" when
// unset): the path, its activation precision and whether quantized weights
// use the int8 dot product. Throws std::invalid_argument naming the
// variable on a value this CPU cannot run; read before any weight is.
struct KernelChoice {
    kernels::Isa isa;
    kernels::Activations activations;
    bool vnni;
};
KernelChoice kernel_choice_from_env();

// Loads DIR (config.json, generation_config.json, safetensors) into a CPU
// backend. threads: 0 = every core. The SIMD path is kernels::best_isa()
// unless TF_ISA (avx512-bf16, avx512, avx2, scalar) says otherwise, and the
// activations its default unless TF_ACTIVATIONS (f32, bf16) says otherwise,
// and quantized weights use VNNI where the CPU has it unless TF_VNNI=off.
// `weights` may ask for quantized weights (Weights::load). Throws LoadError,
// or std::invalid_argument for a path this CPU lacks.
std::unique_ptr<model::Backend> load_cpu_backend(const std::string& dir, int threads,
                                                 const WeightOptions& weights = {},
                                                 kernels::KvType kv_type = kernels::kDefaultKvType);
std::unique_ptr<CpuBackend> load_cpu_backend(const std::string& dir, int threads, kernels::Isa isa);
std::unique_ptr<CpuBackend> load_cpu_backend(const std::string& dir, int threads, kernels::Isa isa,
                                             kernels::Activations activations, const WeightOptions& weights = {});
std::unique_ptr<CpuBackend> load_cpu_backend(const std::string& dir, int threads, kernels::Isa isa,
                                             kernels::Activations activations, const WeightOptions& weights, bool vnni,
                                             kernels::KvType kv_type = kernels::kDefaultKvType);

}  // namespace tf::cpu
