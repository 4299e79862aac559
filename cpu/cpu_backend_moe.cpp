// CpuBackend's mixture-of-experts layers (Qwen3-MoE, NemotronH's E layers):
// the router, then each expert's MLP over the rows routed to it, then each
// row's weighted sum of its experts' outputs. NemotronH adds a shared expert
// every row reads, and may run the routed experts in a narrower latent
// width (the input projected down before them, their sum back up after).
//
// A round reads each expert it touches once: the rows of a forward are
// grouped by expert (a verify round's rows often agree), and an expert's
// matrices run over its rows in one multi-row call, all experts of a layer
// in one parallel region (kernels::matmul_batches).
//
// Batch invariance: the router's logits come from the batch-invariant
// float matmul and route_token is a function of one row; an expert's output
// for a row is the matmul kernels' (independent of how many rows share the
// call and of their places); and a row's experts are summed in ascending
// expert index, acc = acc + weight * y from zero, whatever else the batch
// routed where, then (NemotronH) routed + shared. The order is the one
// transformers' loop over experts adds them in, so fp32 references agree
// closely.
#include <algorithm>
#include <cstring>

#include "cpu/cpu_backend.h"
#include "cpu/moe_router.h"
#include "cpu/row_buffers.h"

namespace tf::cpu {

using rows::grow;
using rows::row_of;

void CpuBackend::moe_block(const LayerWeights& l, int32_t M) {
    const model::ModelConfig& c = config();
    const model::MoeConfig& moe = c.moe;
    const int32_t hidden = c.hidden_size, inter = moe.expert_intermediate, n_experts = moe.num_experts,
                  k = moe.experts_per_token;
    const bool latent = moe.latent_size > 0;
    const int32_t width = latent ? moe.latent_size : hidden;  // the routed experts' input and output
    const bool gated = c.mlp == model::MlpKind::silu_gated;

    // The router, in fp32 on the float path: normed_ holds the rows after.
    norm_and_pack(l.mlp_norm, l.mlp_norm_bias, l.router, M);
    grow(router_logits_, M, n_experts);
    run_matmul(M, {kernels::MatmulJob{&l.router, router_logits_.data(), n_experts}});
    routes_.resize(static_cast<size_t>(M) * k);
    pool_.parallel_for(M, [&](int64_t begin, int64_t end) {
        thread_local std::vector<float> scratch;
        scratch.resize(2 * static_cast<size_t>(n_experts));
        for (int64_t m = begin; m < end; ++m) {
            route_token(moe, router_logits_.data() + m * n_experts, l.router_bias,
                        std::span<ExpertChoice>(routes_.data() + m * k, static_cast<size_t>(k)), scratch.data());
        }
    });

    // Slots: one per (row, chosen expert), grouped by expert, rows ascending
    // inside a group. expert_first_[e] is expert e's first slot.
    expert_first_.assign(static_cast<size_t>(n_experts) + 1, 0);
    for (const ExpertChoice& choice : routes_) ++expert_first_[choice.expert + 1];
    for (int32_t e = 0; e < n_experts; ++e) expert_first_[e + 1] += expert_first_[e];
    const int32_t slots = M * k;
    route_slot_.resize(static_cast<size_t>(slots));
    slot_row_.resize(static_cast<size_t>(slots));
    {
        std::vector<int32_t>& next = expert_next_;
        next.assign(expert_first_.begin(), expert_first_.end() - 1);
        for (int32_t m = 0; m < M; ++m) {
            for (int32_t r = 0; r < k; ++r) {
                const int32_t slot = next[routes_[m * k + r].expert]++;
                route_slot_[m * k + r] = slot;
                slot_row_[slot] = m;
            }
        }
    }
    for (int32_t e = 0; e < n_experts; ++e) experts_read_ += expert_first_[e + 1] > expert_first_[e] ? 1 : 0;
    ++expert_layers_run_;

    // The rows the routed experts read: the normed rows, or their latent
    // projection (moe_latent_). The shared expert reads the normed rows.
    if (latent) {
        pack_rows_for(l.latent_down, normed_.data(), M, hidden, hidden);
        grow(moe_latent_, M, width);
        run_matmul(M, {kernels::MatmulJob{&l.latent_down, moe_latent_.data(), width}});
    }
    const float* expert_input = latent ? moe_latent_.data() : normed_.data();
    if (l.shared_expert.w_up.rows > 0) shared_expert(l, M);

    // Each slot's input: its row packed for the experts' first matrices
    // (all experts of a layer share a format), packed once per row.
    const WeightMatrix& first = gated ? l.experts[0].w_gate : l.experts[0].w_up;
    const size_t in_row = packed_row_bytes(first);
    const kernels::PackRowsFn pack_in = pack_for(first);
    grow(moe_rows_, M, static_cast<int32_t>((in_row + 3) / 4));
    grow(moe_in_, slots, static_cast<int32_t>((in_row + 3) / 4));
    auto* rows_packed = reinterpret_cast<char*>(moe_rows_.data());
    auto* slots_packed = reinterpret_cast<char*>(moe_in_.data());
    pool_.parallel_for(M, [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) pack_in(expert_input + m * width, 1, width, width, rows_packed + m * in_row);
    });
    pool_.parallel_for(slots, [&](int64_t begin, int64_t end) {
        for (int64_t s = begin; s < end; ++s) std::memcpy(slots_packed + s * in_row, rows_packed + slot_row_[s] * in_row, in_row);
    });

    // Gate and up of every expert with rows, in one region.
    grow(gate_, slots, inter);
    grow(up_, slots, inter);
    matmul_batches_.clear();
    for (int32_t e = 0; e < n_experts; ++e) {
        const int32_t s0 = expert_first_[e], count = expert_first_[e + 1] - s0;
        if (count == 0) continue;
        const ExpertWeights& x = l.experts[e];
        kernels::MatmulBatch batch{slots_packed + s0 * in_row, count, {}, 0};
        if (gated) batch.jobs[batch.job_count++] = {&x.w_gate, gate_.data() + static_cast<size_t>(s0) * inter, inter};
        batch.jobs[batch.job_count++] = {&x.w_up, up_.data() + static_cast<size_t>(s0) * inter, inter};
        matmul_batches_.push_back(batch);
    }
    run_matmul_batches(first);

    // silu(gate) * up or relu(up)^2 per slot, packed for down_proj.
    const WeightMatrix& down = l.experts[0].w_down;
    const size_t down_row = packed_row_bytes(down);
    const kernels::PackRowsFn pack_down = pack_for(down);
    grow(moe_down_in_, slots, static_cast<int32_t>((down_row + 3) / 4));
    auto* down_packed = reinterpret_cast<char*>(moe_down_in_.data());
    activate_and_pack(gated, slots, inter, pack_down, down_packed, down_row);

    grow(moe_out_, slots, width);
    matmul_batches_.clear();
    for (int32_t e = 0; e < n_experts; ++e) {
        const int32_t s0 = expert_first_[e], count = expert_first_[e + 1] - s0;
        if (count == 0) continue;
        kernels::MatmulBatch batch{down_packed + s0 * down_row, count, {}, 1};
        batch.jobs[0] = {&l.experts[e].w_down, moe_out_.data() + static_cast<size_t>(s0) * width, width};
        matmul_batches_.push_back(batch);
    }
    run_matmul_batches(down);

    // Each row: its experts' outputs, weighted, in ascending expert order
    // (route_token sorted them), into moe_sum_ (width per row).
    grow(moe_sum_, M, width);
    pool_.parallel_for(M, [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
            float* sum = moe_sum_.data() + m * width;
            std::fill(sum, sum + width, 0.0f);
            for (int32_t r = 0; r < k; ++r) {
                const float w = routes_[m * k + r].weight;
                const float* y = moe_out_.data() + static_cast<size_t>(route_slot_[m * k + r]) * width;
                for (int32_t i = 0; i < width; ++i) sum[i] = sum[i] + w * y[i];
            }
        }
    });
    const float* routed = moe_sum_.data();
    if (latent) {
        grow(out_, M, hidden);
        pack_rows_for(l.latent_up, moe_sum_.data(), M, width, width);
        run_matmul(M, {kernels::MatmulJob{&l.latent_up, out_.data(), hidden}});
        routed = out_.data();
    }
    const bool shared = l.shared_expert.w_up.rows > 0;
    for (size_t i = 0; i < static_cast<size_t>(M) * hidden; ++i) {
        x_[i] += shared ? routed[i] + moe_shared_[i] : routed[i];
    }
}

void CpuBackend::shared_expert(const LayerWeights& l, int32_t M) {
    // relu(up(x))^2 then down, on the normed rows: an ordinary MLP without a
    // gate, its output kept in moe_shared_ until the routed sum is ready.
    const int32_t hidden = config().hidden_size, shared = l.shared_expert.w_up.rows;
    pack_rows_for(l.shared_expert.w_up, normed_.data(), M, hidden, hidden);
    grow(up_, M, shared);
    grow(gate_, M, shared);
    run_matmul(M, {kernels::MatmulJob{&l.shared_expert.w_up, up_.data(), shared}});
    grow_packed(M, l.shared_expert.w_down);
    activate_and_pack(false, M, shared, pack_for(l.shared_expert.w_down), reinterpret_cast<char*>(split_.data()),
                      packed_row_bytes(l.shared_expert.w_down));
    grow(moe_shared_, M, hidden);
    run_matmul(M, {kernels::MatmulJob{&l.shared_expert.w_down, moe_shared_.data(), hidden}});
}

void CpuBackend::run_matmul_batches(const WeightMatrix& any) {
    for ([[maybe_unused]] const kernels::MatmulBatch& batch : matmul_batches_) {
        for (int32_t j = 0; j < batch.job_count; ++j) {
            assert(kernels::is_quantized(batch.jobs[j].w->format) == kernels::is_quantized(any.format));
        }
    }
    kernels::matmul_batches(kernels::is_quantized(any.format) ? quant_->matmul : kernels_->matmul, pool_, matmul_batches_,
                            matmul_units_);
}

}  // namespace tf::cpu
