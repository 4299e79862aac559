#include "cpu/cpu_backend.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "cpu/kernels/matmul.h"
#include "cpu/kernels/quant_matmul.h"
#include "cpu/kernels/rmsnorm.h"
#include "cpu/kernels/rope.h"
#include "cpu/row_buffers.h"
#include "model/load_error.h"
#include "model/rope.h"

namespace tf::cpu {

namespace {

using kernels::MatmulJob;

bool supported_head_dim(int32_t head_dim) {
    if (head_dim % 16 != 0) return false;
    const int32_t blocks = head_dim / 16;
    return (blocks >= 1 && blocks <= 8) || blocks == 10 || blocks == 12 || blocks == 16;
}

using rows::add_bias;
using rows::grow;
using rows::row_of;

}  // namespace

CpuBackend::CpuBackend(std::unique_ptr<Weights> weights, int threads, kernels::Isa isa)
    : CpuBackend(std::move(weights), threads, isa, kernels::default_activations(isa)) {}

CpuBackend::CpuBackend(std::unique_ptr<Weights> weights, int threads, kernels::Isa isa,
                       kernels::Activations activations)
    : CpuBackend(std::move(weights), threads, isa, activations, kernels::quant_vnni_supported(isa)) {}

CpuBackend::CpuBackend(std::unique_ptr<Weights> weights, int threads, kernels::Isa isa,
                       kernels::Activations activations, bool vnni, kernels::KvType kv_type)
    : weights_(std::move(weights)),
      kernels_(&kernels::kernel_table(isa, activations)),
      quant_(&kernels::quant_kernels(isa, vnni)),
      pool_(threads),
      kv_type_(kv_type) {
    const model::ModelConfig& c = weights_->config();
    if (c.attention_layer_count() > 0 && !supported_head_dim(c.head_dim)) {
        throw model::LoadError("config.json: head_dim " + std::to_string(c.head_dim) +
                               " is not supported by the CPU backend (a multiple of 16: 16..128, 160, 192 or 256)");
    }
    if (kv_type_ == kernels::KvType::q8_0 && c.attention_layer_count() > 0 && c.head_dim % kernels::kKvQuantBlock != 0) {
        throw model::LoadError("--kv-type q8_0: head_dim " + std::to_string(c.head_dim) +
                               " is not a multiple of 32 (the q8_0 block); use f16");
    }
    inv_freq_ = model::rope_inv_freq(c);
    for (int32_t layer = 0, kv = 0, mamba = 0; layer < c.num_layers; ++layer) {
        kv_layer_.push_back(c.has_attention(layer) ? kv++ : -1);
        mamba_layer_.push_back(c.layer_kind(layer) == model::LayerKind::mamba ? mamba++ : -1);
    }
}

size_t CpuBackend::kv_bytes_per_token() const {
    const model::ModelConfig& c = config();
    return KvCache::bytes_per_token(c.attention_layer_count(), c.num_kv_heads, c.head_dim, kv_type_);
}

KvCache& CpuBackend::cache(model::StreamId stream) {
    auto it = streams_.find(stream);
    if (it == streams_.end()) throw std::invalid_argument("stream " + std::to_string(stream) + " is not open");
    return *it->second;
}

const KvCache& CpuBackend::cache(model::StreamId stream) const {
    auto it = streams_.find(stream);
    if (it == streams_.end()) throw std::invalid_argument("stream " + std::to_string(stream) + " is not open");
    return *it->second;
}

void CpuBackend::open_stream(model::StreamId stream, int32_t capacity) {
    if (streams_.count(stream)) throw std::invalid_argument("stream " + std::to_string(stream) + " is already open");
    if (capacity <= 0) throw std::invalid_argument("stream capacity must be positive, got " + std::to_string(capacity));
    const model::ModelConfig& c = config();
    // Only attention layers have K/V; the cache's length is the stream's either way.
    streams_.emplace(stream,
                     std::make_unique<KvCache>(c.attention_layer_count(), c.num_kv_heads, c.head_dim, capacity, kv_type_));
    if (c.recurrent()) {
        recurrent_.emplace(stream, std::make_unique<RecurrentState>(c.mamba, c.mamba_layer_count()));
    }
}

void CpuBackend::close_stream(model::StreamId stream) {
    if (streams_.erase(stream) == 0) throw std::invalid_argument("stream " + std::to_string(stream) + " is not open");
    recurrent_.erase(stream);
}

RecurrentState* CpuBackend::recurrent(model::StreamId stream) const {
    auto it = recurrent_.find(stream);
    return it == recurrent_.end() ? nullptr : it->second.get();
}

bool CpuBackend::holds_state_at(model::StreamId stream, int32_t length) const {
    if (length < 0 || length > cache(stream).length()) return false;
    const RecurrentState* state = recurrent(stream);
    return !state || state->holds(length);
}

void CpuBackend::keep_state_at(model::StreamId stream, int32_t length) {
    cache(stream);  // must be open
    RecurrentState* state = recurrent(stream);
    if (!state || state->snapshot_length() == length) return;
    if (length > state->length()) {
        state->request_snapshot(length);  // taken when a forward passes it
    } else if (length == state->length()) {
        state->snapshot_now();  // a stream resumed exactly there (a regenerated prompt)
    }
}

int32_t CpuBackend::stream_length(model::StreamId stream) const { return cache(stream).length(); }

void CpuBackend::truncate(model::StreamId stream, int32_t length) {
    KvCache& kv = cache(stream);
    if (length < 0 || length > kv.length()) {
        throw std::invalid_argument("truncate stream " + std::to_string(stream) + " to " + std::to_string(length) +
                                    ": it holds " + std::to_string(kv.length()) + " positions");
    }
    if (RecurrentState* state = recurrent(stream); state && length != kv.length()) {
        if (!state->holds(length)) {
            throw std::invalid_argument("truncate stream " + std::to_string(stream) + " to " + std::to_string(length) +
                                        ": its recurrent state reaches back to " +
                                        std::to_string(state->round_start()) +
                                        " (the start of its last forward) or a kept snapshot only");
        }
        if (length >= state->round_start()) {
            state->keep_rows(length - state->round_start());
            replay(*state, state->round_rows());
        } else {
            state->restore_snapshot();
        }
    }
    kv.set_length(length);
}

void CpuBackend::copy_prefix(model::StreamId from, model::StreamId to, int32_t length) {
    const KvCache& source = cache(from);
    KvCache& target = cache(to);
    if (from == to || length < 0 || length > source.length() || length > target.capacity()) {
        throw std::invalid_argument("copy_prefix " + std::to_string(length) + " positions from stream " +
                                    std::to_string(from) + " (length " + std::to_string(source.length()) +
                                    ") to stream " + std::to_string(to) + " (capacity " +
                                    std::to_string(target.capacity()) + ")");
    }
    RecurrentState* from_state = recurrent(from);
    if (from_state && !from_state->holds(length)) {
        throw std::invalid_argument("copy_prefix " + std::to_string(length) + " positions from stream " +
                                    std::to_string(from) + ": its recurrent state is held at lengths " +
                                    std::to_string(from_state->round_start()) + ".." +
                                    std::to_string(from_state->length()) + " and the snapshot " +
                                    std::to_string(from_state->snapshot_length()) + " only");
    }
    target.copy_prefix(source, length);
    if (from_state) {
        RecurrentState& to_state = *recurrent(to);
        replay(to_state, to_state.assign(*from_state, length));
    }
}

bool CpuBackend::move_prefix(model::StreamId from, model::StreamId to, int32_t length) {
    auto source = streams_.find(from), target = streams_.find(to);
    // A recurrent state is kept at a few lengths only; copy_prefix knows them.
    if (source == streams_.end() || target == streams_.end() || from == to || recurrent(from) ||
        source->second->capacity() != target->second->capacity() || length < 0 ||
        length > source->second->length()) {
        copy_prefix(from, to, length);  // or its error
        return false;
    }
    std::swap(source->second, target->second);
    target->second->set_length(length);
    source->second->set_length(0);
    return true;
}

void CpuBackend::fill_stream_for_benchmark(model::StreamId stream, int32_t length) {
    const model::ModelConfig& c = config();
    KvCache& kv = cache(stream);
    if (c.recurrent()) throw std::invalid_argument("fill_stream_for_benchmark: a recurrent model's state cannot be made up");
    if (kv.length() != 0 || length < 0 || length > kv.capacity()) {
        throw std::invalid_argument("fill_stream_for_benchmark: stream " + std::to_string(stream) + " holds " +
                                    std::to_string(kv.length()) + " of " + std::to_string(kv.capacity()) +
                                    " positions; asked for " + std::to_string(length));
    }
    // One table of values in [-1, 1); each position takes a window of it
    // from its own offset.
    const int32_t kv_dim = c.num_kv_heads * c.head_dim, period = 4093;
    std::vector<float> table(static_cast<size_t>(period + 2 * kv_dim));
    uint64_t x = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(stream);
    for (float& t : table) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        t = static_cast<float>(static_cast<int32_t>(x >> 40) - (1 << 23)) / static_cast<float>(1 << 23);
    }
    pool_.parallel_for(length, [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) {
            for (int32_t layer = 0; layer < c.attention_layer_count(); ++layer) {
                const float* k = table.data() + (p * 613 + layer * 89) % period;
                kv.write(layer, static_cast<int32_t>(p), k, k + kv_dim);
            }
        }
    });
    kv.set_length(length);
}

void CpuBackend::check_rows(std::span<const model::Row> rows, size_t samplers) {
    std::unordered_map<model::StreamId, int32_t> next;
    row_caches_.clear();
    for (const model::Row& row : rows) {
        KvCache& kv = cache(row.stream);
        auto [it, first] = next.try_emplace(row.stream, kv.length());
        if (row.position != it->second) {
            throw std::invalid_argument("row of stream " + std::to_string(row.stream) + " has position " +
                                        std::to_string(row.position) + ", expected " + std::to_string(it->second));
        }
        if (row.position >= kv.capacity()) {
            throw std::invalid_argument("stream " + std::to_string(row.stream) + " is full (capacity " +
                                        std::to_string(kv.capacity()) + ")");
        }
        if (row.token < 0 || row.token >= config().vocab_size) {
            throw std::invalid_argument("token " + std::to_string(row.token) + " is outside the vocabulary");
        }
        if (row.sampler < -1 || row.sampler >= static_cast<int32_t>(samplers)) {
            throw std::invalid_argument("row of stream " + std::to_string(row.stream) + " names sampler " +
                                        std::to_string(row.sampler) + " of " + std::to_string(samplers));
        }
        it->second = row.position + 1;
        row_caches_.push_back(&kv);
    }
}

void CpuBackend::forward(std::span<const model::Row> rows, std::span<const model::SamplingParams> samplers,
                         model::RowOutputs& out) {
    check_rows(rows, samplers.size());
    const model::ModelConfig& c = config();
    const auto M = static_cast<int32_t>(rows.size());
    const int32_t hidden = c.hidden_size, half = c.rope_dim() / 2, vocab = c.vocab_size;
    // Output rows: those that sample or want logits, in row order.
    int32_t outputs = 0, wanted = 0, sampled = 0;
    for (const model::Row& row : rows) {
        outputs += row.want_logits || row.sampler >= 0 ? 1 : 0;
        wanted += row.want_logits ? 1 : 0;
        sampled += row.sampler >= 0 ? 1 : 0;
    }
    out.logits.resize(static_cast<size_t>(wanted) * vocab);
    out.tokens.resize(static_cast<size_t>(sampled));
    if (M == 0) return;

    grow(x_, M, hidden);
    grow(cos_, M, half);
    grow(sin_, M, half);
    for (int32_t m = 0; m < M; ++m) {
        weights_->embed(rows[m].token, row_of(x_, m, hidden));
        kernels::rope_angles(inv_freq_.data(), half, rows[m].position, row_of(cos_, m, half), row_of(sin_, m, half));
    }
    if (c.recurrent()) begin_recurrent_rounds(rows);
    experts_read_ = 0;
    expert_layers_run_ = 0;
    const auto& layers = weights_->layers();
    for (int32_t layer = 0; layer < c.num_layers; ++layer) {
        const LayerWeights& l = layers[layer];
        if (l.kind == model::LayerKind::mamba) mamba_block(l, mamba_layer_[layer], rows);
        if (c.has_attention(layer)) attention_block(l, kv_layer_[layer], rows);
        if (c.has_experts(layer)) {
            moe_block(l, M);
        } else if (c.has_mlp(layer)) {
            mlp_block(l, M);
        }
    }
    for (int32_t m = 0; m < M; ++m) row_caches_[m]->set_length(rows[m].position + 1);
    if (c.recurrent()) finish_recurrent_rounds(rows);
    if (outputs == 0) return;

    // Final norm and lm_head for the output rows: straight into out.logits
    // when every one of them wants its logits back, else into scratch.
    const bool direct = wanted == outputs;
    if (!direct) grow(logits_, outputs, vocab);
    float* logits = direct ? out.logits.data() : logits_.data();
    grow(normed_, outputs, hidden);
    output_rows_.clear();
    for (int32_t m = 0; m < M; ++m) {
        if (!rows[m].want_logits && rows[m].sampler < 0) continue;
        norm_row(row_of(x_, m, hidden), weights_->final_norm(), weights_->final_norm_bias(),
                 row_of(normed_, static_cast<int32_t>(output_rows_.size()), hidden));
        output_rows_.push_back(m);
    }
    pack_rows_for(weights_->lm_head(), normed_.data(), outputs, hidden, hidden);
    run_matmul(outputs, {MatmulJob{&weights_->lm_head(), logits, vocab}});

    // Each sampling row is sampled on its own: rows go to threads (a cut
    // over a large vocabulary sorts its candidates, which is worth sharing).
    std::vector<int32_t> token_index(static_cast<size_t>(outputs), -1);
    for (int32_t o = 0, t = 0; o < outputs; ++o) {
        if (rows[output_rows_[o]].sampler >= 0) token_index[o] = t++;
    }
    pool_.parallel_for(outputs, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
            const model::Row& row = rows[output_rows_[o]];
            if (row.sampler < 0) continue;
            const std::span<const float> row_logits(logits + o * vocab, static_cast<size_t>(vocab));
            out.tokens[token_index[o]] = sample(row_logits, samplers[row.sampler], row.position + 1);
        }
    });
    if (direct) return;
    for (int32_t o = 0, w = 0; o < outputs; ++o) {
        if (!rows[output_rows_[o]].want_logits) continue;
        std::copy_n(logits + static_cast<size_t>(o) * vocab, vocab, out.logits.data() + static_cast<size_t>(w++) * vocab);
    }
}

kernels::PackRowsFn CpuBackend::pack_for(const WeightMatrix& w) const {
    return kernels::is_quantized(w.format) ? quant_->pack_rows : kernels_->pack_rows;
}

size_t CpuBackend::packed_row_bytes(const WeightMatrix& w) const {
    return kernels::is_quantized(w.format) ? quant_->row_bytes(w.cols) : kernels_->row_bytes(w.cols);
}

void CpuBackend::grow_packed(int32_t rows, const WeightMatrix& w) {
    const size_t floats = (static_cast<size_t>(rows) * packed_row_bytes(w) + 3) / 4;
    if (split_.size() < floats) split_.resize(floats);
}

void CpuBackend::pack_rows_for(const WeightMatrix& consumer, const float* x, int32_t rows, int32_t k, int32_t ldx) {
    grow_packed(rows, consumer);
    const kernels::PackRowsFn pack = pack_for(consumer);
    const size_t packed_row = packed_row_bytes(consumer);
    auto* packed = reinterpret_cast<char*>(split_.data());
    if (rows == 1) return pack(x, 1, k, ldx, packed);
    pool_.parallel_for(rows, [&](int64_t begin, int64_t end) {
        pack(x + begin * ldx, static_cast<int32_t>(end - begin), k, ldx, packed + begin * packed_row);
    });
}

void CpuBackend::run_matmul(int32_t M, std::initializer_list<kernels::MatmulJob> jobs) {
    // One input for every job, so one kind of kernel for all of them.
    const bool quantized = kernels::is_quantized(jobs.begin()->w->format);
    for ([[maybe_unused]] const kernels::MatmulJob& job : jobs) assert(kernels::is_quantized(job.w->format) == quantized);
    kernels::matmul(quantized ? quant_->matmul : kernels_->matmul, pool_, split_.data(), M, jobs);
}

void CpuBackend::norm_row(const float* x, const float* weight, const float* bias, float* out) const {
    const model::ModelConfig& c = config();
    if (c.norm == model::NormKind::layer_norm_1p) {
        kernels::layernorm_row(x, weight, bias, c.hidden_size, c.rms_norm_eps, out);
    } else {
        kernels::rmsnorm_row(x, weight, c.hidden_size, c.rms_norm_eps, out);
    }
}

void CpuBackend::norm_and_pack(const float* norm_weight, const float* norm_bias, const WeightMatrix& consumer,
                               int32_t M) {
    const model::ModelConfig& c = config();
    const int32_t hidden = c.hidden_size;
    const size_t packed_row = packed_row_bytes(consumer);
    const kernels::PackRowsFn pack = pack_for(consumer);
    grow(normed_, M, hidden);
    grow_packed(M, consumer);
    // Rows go to threads: at prefill sizes these serial per-row sums would
    // otherwise be the part of a forward that a second thread cannot share.
    pool_.parallel_for(M, [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
            float* normed = normed_.data() + m * hidden;
            norm_row(x_.data() + m * hidden, norm_weight, norm_bias, normed);
            pack(normed, 1, hidden, hidden, reinterpret_cast<char*>(split_.data()) + m * packed_row);
        }
    });
}

void CpuBackend::attention_block(const LayerWeights& l, int32_t layer, std::span<const model::Row> rows) {
    const model::ModelConfig& c = config();
    const auto M = static_cast<int32_t>(rows.size());
    const int32_t hidden = c.hidden_size, head_dim = c.head_dim, half = c.rope_dim() / 2;
    const int32_t q_dim = c.num_heads * head_dim, kv_dim = c.num_kv_heads * head_dim;
    grow(normed_, M, hidden);
    grow(q_, M, q_dim);
    grow(k_, M, kv_dim);
    grow(v_, M, kv_dim);
    grow(attn_, M, q_dim);
    grow(out_, M, hidden);

    norm_and_pack(l.attn_norm, l.attn_norm_bias, l.wq, M);
    run_matmul(M, {MatmulJob{&l.wq, q_.data(), q_dim}, MatmulJob{&l.wk, k_.data(), kv_dim},
                   MatmulJob{&l.wv, v_.data(), kv_dim}});
    add_bias(q_.data(), l.q_bias, M, q_dim);
    add_bias(k_.data(), l.k_bias, M, kv_dim);
    add_bias(v_.data(), l.v_bias, M, kv_dim);

    // Per row: q/k norm, RoPE, and the K/V append. Rows go to threads; two
    // rows never write the same cache slot (distinct stream or position).
    attention_rows_.resize(static_cast<size_t>(M));
    pool_.parallel_for(M, [&](int64_t begin, int64_t end) {
        for (auto m = static_cast<int32_t>(begin); m < end; ++m) {
            float* q = row_of(q_, m, q_dim);
            float* k = row_of(k_, m, kv_dim);
            if (c.qk_norm) {  // Qwen3: RMSNorm over each head, before RoPE
                for (int32_t h = 0; h < c.num_heads; ++h) kernels::rmsnorm_row(q + h * head_dim, l.q_norm, head_dim, c.rms_norm_eps, q + h * head_dim);
                for (int32_t h = 0; h < c.num_kv_heads; ++h) kernels::rmsnorm_row(k + h * head_dim, l.k_norm, head_dim, c.rms_norm_eps, k + h * head_dim);
            }
            if (half > 0) {  // on the first rope_dim() dims of each head; NemotronH has no RoPE
                for (int32_t h = 0; h < c.num_heads; ++h)
                    kernels::rope_head(q + h * head_dim, row_of(cos_, m, half), row_of(sin_, m, half), half);
                for (int32_t h = 0; h < c.num_kv_heads; ++h)
                    kernels::rope_head(k + h * head_dim, row_of(cos_, m, half), row_of(sin_, m, half), half);
            }

            // Append this row's K/V before any row attends: later rows of the
            // same stream in this batch read it.
            KvCache& kv = *row_caches_[m];
            const int32_t position = rows[m].position;
            kv.write(layer, position, k, row_of(v_, m, kv_dim));
            kernels::AttentionRow& a = attention_rows_[m];
            a.keys = kv.keys(layer);
            a.values = kv.values(layer);
            a.head_stride = kv.head_stride();
            a.last = position;
            a.first = c.sliding_window > 0 ? std::max(0, position - c.sliding_window + 1) : 0;
        }
    });
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    kernels::attention(*kernels_, kv_type_, pool_, q_.data(), M, attention_rows_.data(), c.num_heads, c.num_kv_heads, head_dim,
                       scale, attn_.data(), attention_scratch_);

    pack_rows_for(l.wo, attn_.data(), M, q_dim, q_dim);
    run_matmul(M, {MatmulJob{&l.wo, out_.data(), hidden}});
    add_bias(out_.data(), l.o_bias, M, hidden);
    for (size_t i = 0; i < static_cast<size_t>(M) * hidden; ++i) x_[i] += out_[i];
}

void CpuBackend::mlp_block(const LayerWeights& l, int32_t M) {
    const model::ModelConfig& c = config();
    const int32_t hidden = c.hidden_size, inter = c.intermediate_size;
    const bool gated = c.mlp == model::MlpKind::silu_gated;
    grow(gate_, M, inter);
    grow(up_, M, inter);

    norm_and_pack(l.mlp_norm, l.mlp_norm_bias, l.w_up, M);
    if (gated) {
        run_matmul(M, {MatmulJob{&l.w_gate, gate_.data(), inter}, MatmulJob{&l.w_up, up_.data(), inter}});
    } else {
        run_matmul(M, {MatmulJob{&l.w_up, up_.data(), inter}});
        add_bias(up_.data(), l.up_bias, M, inter);
    }
    grow_packed(M, l.w_down);
    activate_and_pack(gated, M, inter, pack_for(l.w_down), reinterpret_cast<char*>(split_.data()), packed_row_bytes(l.w_down));
    run_matmul(M, {MatmulJob{&l.w_down, out_.data(), hidden}});
    add_bias(out_.data(), l.down_bias, M, hidden);
    for (size_t i = 0; i < static_cast<size_t>(M) * hidden; ++i) x_[i] += out_[i];
}

void CpuBackend::activate_and_pack(bool gated, int32_t rows, int32_t inter, kernels::PackRowsFn pack, char* packed,
                                   size_t packed_row) {
    // silu(gate) * up, or relu(up)^2, then the packed copy for down_proj:
    // per row, so rows go to threads. The exps are the attention's exp16,
    // 16 at a time (the same bits on every path; std::exp one by one was a
    // tenth of a 16-row forward).
    const size_t padded = static_cast<size_t>(inter + 15) / 16 * 16;
    pool_.parallel_for(rows, [&](int64_t begin, int64_t end) {
        thread_local std::vector<float> e;
        e.assign(padded, 0.0f);
        for (int64_t m = begin; m < end; ++m) {
            float* g = gate_.data() + m * inter;
            float* u = up_.data() + m * inter;
            if (gated) {
                for (int32_t i = 0; i < inter; ++i) e[i] = -g[i];
                kernels_->exp16_values(e.data(), padded, e.data());
                for (int32_t i = 0; i < inter; ++i) g[i] = g[i] / (1.0f + e[i]) * u[i];
            } else {
                for (int32_t i = 0; i < inter; ++i) {
                    const float r = u[i] > 0.0f ? u[i] : 0.0f;
                    g[i] = r * r;
                }
            }
            pack(g, 1, inter, inter, packed + m * packed_row);
        }
    });
}

std::unique_ptr<CpuBackend> load_cpu_backend(const std::string& dir, int threads, kernels::Isa isa,
                                             kernels::Activations activations, const WeightOptions& weights) {
    return std::make_unique<CpuBackend>(Weights::load(dir, weights), threads, isa, activations);
}

std::unique_ptr<CpuBackend> load_cpu_backend(const std::string& dir, int threads, kernels::Isa isa,
                                             kernels::Activations activations, const WeightOptions& weights,
                                             bool vnni, kernels::KvType kv_type) {
    return std::make_unique<CpuBackend>(Weights::load(dir, weights), threads, isa, activations, vnni, kv_type);
}

std::unique_ptr<CpuBackend> load_cpu_backend(const std::string& dir, int threads, kernels::Isa isa) {
    return load_cpu_backend(dir, threads, isa, kernels::default_activations(isa));
}

KernelChoice kernel_choice_from_env() {
    // Each value parsed as the variable says it, the error prefixed with its name.
    auto parse = [](const char* name, auto&& parse_text) {
        const char* text = std::getenv(name);
        try {
            return parse_text(text ? text : "auto");
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument(std::string(name) + ": " + e.what());
        }
    };
    KernelChoice choice{};
    choice.isa = parse("TF_ISA", [](const std::string& text) { return kernels::parse_isa(text); });
    choice.activations =
        parse("TF_ACTIVATIONS", [&](const std::string& text) { return kernels::parse_activations(text, choice.isa); });
    choice.vnni = parse("TF_VNNI", [&](const std::string& text) { return kernels::parse_vnni(text, choice.isa); });
    return choice;
}

std::unique_ptr<model::Backend> load_cpu_backend(const std::string& dir, int threads, const WeightOptions& weights,
                                                 kernels::KvType kv_type) {
    const KernelChoice choice = kernel_choice_from_env();  // before any weight is read
    return load_cpu_backend(dir, threads, choice.isa, choice.activations, weights, choice.vnni, kv_type);
}

}  // namespace tf::cpu
