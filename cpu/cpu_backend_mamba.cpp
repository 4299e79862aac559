// CpuBackend's Mamba2 layers (NemotronH): the mixer's forward over a batch
// of rows, and the replay that rolls a stream's recurrent state back.
//
// Batch invariance holds as for attention: in_proj and out_proj are the
// backend's matmuls; the conv, the time steps and the gated norm are one
// row's fixed-order loops; the scan runs each stream's rows in order from
// the state at its round's start, threads splitting heads, never a sum.
// So a row's logits are the same alone, in any batch, and as a prefill,
// decode or verify row (tests/cpu/mamba_backend_test.cpp).
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "cpu/cpu_backend.h"
#include "cpu/mamba.h"
#include "cpu/row_buffers.h"

namespace tf::cpu {

namespace {

// Heads one scan job runs: enough work per job to be worth a thread, and
// jobs enough to share a lone stream's row between threads.
constexpr int32_t kScanHeadsPerJob = 4;

using rows::add_bias;
using rows::grow;
using rows::row_of;

std::vector<float>& thread_scratch(size_t floats) {
    thread_local std::vector<float> scratch;
    if (scratch.size() < floats) scratch.resize(floats);
    return scratch;
}

size_t padded16(int32_t n) { return (static_cast<size_t>(n) + 15) / 16 * 16; }

}  // namespace

void CpuBackend::begin_recurrent_rounds(std::span<const model::Row> rows) {
    const auto M = static_cast<int32_t>(rows.size());
    row_states_.assign(static_cast<size_t>(M), nullptr);
    row_round_.assign(static_cast<size_t>(M), 0);
    stream_rows_.clear();
    std::unordered_map<model::StreamId, size_t> index;
    for (int32_t m = 0; m < M; ++m) {
        auto [it, first] = index.try_emplace(rows[m].stream, stream_rows_.size());
        if (first) stream_rows_.emplace_back();
        std::vector<int32_t>& mine = stream_rows_[it->second];
        row_round_[m] = static_cast<int32_t>(mine.size());
        mine.push_back(m);
        row_states_[m] = recurrent(rows[m].stream);
    }
    for (const std::vector<int32_t>& mine : stream_rows_) {
        row_states_[mine.front()]->begin_round(static_cast<int32_t>(mine.size()));
    }
}

void CpuBackend::finish_recurrent_rounds(std::span<const model::Row> rows) {
    for (const std::vector<int32_t>& mine : stream_rows_) {
        RecurrentState& state = *row_states_[mine.front()];
        const int32_t wanted = state.pending_snapshot();
        if (wanted > 0 && rows[mine.front()].position < wanted && rows[mine.back()].position >= wanted - 1) {
            state.finish_snapshot();
        }
    }
}

void CpuBackend::mamba_block(const LayerWeights& l, int32_t mamba_layer, std::span<const model::Row> rows) {
    const model::ModelConfig& c = config();
    const model::MambaConfig& mc = c.mamba;
    const auto M = static_cast<int32_t>(rows.size());
    const int32_t hidden = c.hidden_size, inner = mc.inner(), conv_dim = mc.conv_dim(), heads = mc.num_heads;
    const int32_t in_rows = mc.in_proj_rows();
    grow(proj_, M, in_rows);
    grow(xbc_, M, conv_dim);
    grow(dt_, M, heads);
    grow(y_, M, inner);
    grow(out_, M, hidden);

    norm_and_pack(l.attn_norm, nullptr, l.in_proj, M);
    run_matmul(M, {kernels::MatmulJob{&l.in_proj, proj_.data(), in_rows}});
    add_bias(proj_.data(), l.in_proj_bias, M, in_rows);

    // Each row's raw xBC and dt go into its stream's round log first: a
    // row's conv reads the K-1 raw inputs before it, which may be rows of
    // this batch on other threads.
    pool_.parallel_for(M, [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
            RecurrentState& state = *row_states_[m];
            const float* projected = row_of(proj_, m, in_rows);
            std::memcpy(state.raw_xbc(mamba_layer, row_round_[m]), projected + inner, sizeof(float) * conv_dim);
            std::memcpy(state.raw_dt(mamba_layer, row_round_[m]), projected + inner + conv_dim, sizeof(float) * heads);
        }
    });
    pool_.parallel_for(M, [&](int64_t begin, int64_t end) {
        std::vector<float>& scratch = thread_scratch(padded16(conv_dim));
        for (int64_t m = begin; m < end; ++m) {
            RecurrentState& state = *row_states_[m];
            mamba::conv_row(mc, l.conv_weight, l.conv_bias, state.conv_inputs(mamba_layer, row_round_[m]),
                            kernels_->exp16_values, scratch.data(), row_of(xbc_, m, conv_dim));
            mamba::time_steps(mc, state.raw_dt(mamba_layer, row_round_[m]), l.dt_bias, row_of(dt_, m, heads));
        }
    });

    // The scan: a job is a few heads of one stream, through all its rows.
    const int32_t chunks = (heads + kScanHeadsPerJob - 1) / kScanHeadsPerJob;
    const size_t head_floats = static_cast<size_t>(mc.head_dim) * mc.state_size;
    pool_.parallel_for(static_cast<int64_t>(stream_rows_.size()) * chunks, [&](int64_t begin, int64_t end) {
        for (int64_t job = begin; job < end; ++job) {
            const std::vector<int32_t>& mine = stream_rows_[job / chunks];
            const auto first_head = static_cast<int32_t>(job % chunks) * kScanHeadsPerJob;
            const int32_t end_head = std::min(heads, first_head + kScanHeadsPerJob);
            RecurrentState& state = *row_states_[mine.front()];
            const int32_t snapshot_at = state.pending_snapshot() - 1;
            float* live = state.live_state(mamba_layer);
            for (size_t r = 0; r < mine.size(); ++r) {
                const int32_t m = mine[r];
                const float* from = r == 0 ? state.start_state(mamba_layer) : live;
                mamba::scan_heads(mc, kernels_->scan_state_row, l.A, l.D, row_of(xbc_, m, conv_dim),
                                  row_of(dt_, m, heads), from, live, row_of(y_, m, inner), first_head, end_head);
                if (rows[m].position == snapshot_at) {
                    std::memcpy(state.snapshot_state(mamba_layer) + first_head * head_floats,
                                live + first_head * head_floats, sizeof(float) * head_floats * (end_head - first_head));
                }
            }
        }
    });

    // y * silu(z), normalised per group, packed for out_proj.
    grow_packed(M, l.out_proj);
    const size_t packed_row = packed_row_bytes(l.out_proj);
    const kernels::PackRowsFn pack = pack_for(l.out_proj);
    pool_.parallel_for(M, [&](int64_t begin, int64_t end) {
        std::vector<float>& scratch = thread_scratch(padded16(inner));
        for (int64_t m = begin; m < end; ++m) {
            float* y = row_of(y_, m, inner);
            mamba::gated_norm_row(mc, row_of(proj_, m, in_rows), l.gated_norm, c.rms_norm_eps, kernels_->exp16_values,
                                  scratch.data(), y);
            pack(y, 1, inner, inner, reinterpret_cast<char*>(split_.data()) + m * packed_row);
        }
    });
    run_matmul(M, {kernels::MatmulJob{&l.out_proj, out_.data(), hidden}});
    add_bias(out_.data(), l.out_proj_bias, M, hidden);
    for (size_t i = 0; i < static_cast<size_t>(M) * hidden; ++i) x_[i] += out_[i];
}

void CpuBackend::replay(RecurrentState& state, int32_t rows) {
    if (rows <= 0) return;
    const model::ModelConfig& c = config();
    const model::MambaConfig& mc = c.mamba;
    const int32_t conv_dim = mc.conv_dim(), heads = mc.num_heads;
    const auto& layers = weights_->layers();
    grow(xbc_, rows, conv_dim);
    grow(dt_, rows, heads);
    const int32_t chunks = (heads + kScanHeadsPerJob - 1) / kScanHeadsPerJob;
    for (int32_t layer = 0; layer < c.num_layers; ++layer) {
        const int32_t mamba_layer = mamba_layer_[layer];
        if (mamba_layer < 0) continue;
        const LayerWeights& l = layers[layer];
        // The same conv and time steps as the forward, from the logged raw inputs.
        pool_.parallel_for(rows, [&](int64_t begin, int64_t end) {
            std::vector<float>& scratch = thread_scratch(padded16(conv_dim));
            for (int64_t r = begin; r < end; ++r) {
                const auto row = static_cast<int32_t>(r);
                mamba::conv_row(mc, l.conv_weight, l.conv_bias, state.conv_inputs(mamba_layer, row),
                                kernels_->exp16_values, scratch.data(), row_of(xbc_, r, conv_dim));
                mamba::time_steps(mc, state.raw_dt(mamba_layer, row), l.dt_bias, row_of(dt_, r, heads));
            }
        });
        float* live = state.live_state(mamba_layer);
        const float* start = state.start_state(mamba_layer);
        pool_.parallel_for(chunks, [&](int64_t begin, int64_t end) {
            for (int64_t chunk = begin; chunk < end; ++chunk) {
                const auto first_head = static_cast<int32_t>(chunk) * kScanHeadsPerJob;
                const int32_t end_head = std::min(heads, first_head + kScanHeadsPerJob);
                for (int32_t r = 0; r < rows; ++r) {
                    mamba::scan_heads(mc, kernels_->scan_state_row, l.A, l.D, row_of(xbc_, r, conv_dim),
                                      row_of(dt_, r, heads), r == 0 ? start : live, live, nullptr, first_head,
                                      end_head);
                }
            }
        });
    }
}

}  // namespace tf::cpu
