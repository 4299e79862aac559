// Causal attention with grouped KV heads (GQA), over each stream's KV cache.
// The per-(row, head) kernel lives in kernels_impl.inc (see the order it
// keeps there); this header has the launcher, which spreads (row, head)
// pairs over threads, and the double-precision reference used in tests.
//
// Batch invariance: one (row, head) is one thread's fixed-order pass over
// keys first..position, whatever the batch; the same code for prefill,
// decode and verify.
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <vector>

#include "model/kernels/isa.h"
#include "model/thread_pool.h"

namespace tf::model::kernels {

// kernels

// The reference for one (row, head): softmax in double over keys first..last.
inline void attention_head_reference(const float* q, const float* keys, const float* values, int32_t first,
                                     int32_t last, int32_t head_dim, double scale, double* out) {
    std::vector<double> scores(static_cast<size_t>(last + 1));
    double max_score = -INFINITY;
    for (int32_t j = first; j <= last; ++j) {
        double s = 0;
        for (int32_t d = 0; d < head_dim; ++d) s += static_cast<double>(q[d]) * keys[static_cast<size_t>(j) * head_dim + d];
        scores[j] = s * scale;
        max_score = std::max(max_score, scores[j]);
    }
    double sum = 0;
    for (int32_t j = first; j <= last; ++j) sum += scores[j] = std::exp(scores[j] - max_score);
    for (int32_t d = 0; d < head_dim; ++d) {
        double acc = 0;
        for (int32_t j = first; j <= last; ++j) acc += scores[j] * values[static_cast<size_t>(j) * head_dim + d];
        out[d] = acc / sum;
    }
}

// launchers

// Where one row's keys and values are: kv head h's keys at
// keys + h * head_stride, position j at + j * head_dim (values alike).
struct AttentionRow {
    const float* keys = nullptr;
    const float* values = nullptr;
    size_t head_stride = 0;
    int32_t first = 0;  // first key attended (0, or later with a sliding window)
    int32_t last = 0;   // the row's own position
};

// q: M rows of num_heads * head_dim; out likewise. `scratch` holds score
// buffers, kept between calls.
inline void attention(const KernelTable& kernels, ThreadPool& pool, const float* q, int32_t M,
                      const AttentionRow* rows, int32_t num_heads, int32_t num_kv_heads, int32_t head_dim, float scale,
                      float* out, std::vector<std::vector<float>>& scratch) {
    assert(head_dim % 16 == 0 && num_heads % num_kv_heads == 0);
    int32_t longest = 0;
    for (int32_t m = 0; m < M; ++m) longest = std::max(longest, rows[m].last + 1);
    // One score buffer per (row, head) unit would be wasteful; one per chunk
    // is enough, and a chunk runs on one thread at a time.
    const int64_t units = static_cast<int64_t>(M) * num_heads;
    const int32_t group = num_heads / num_kv_heads;
    const size_t row_floats = static_cast<size_t>(num_heads) * head_dim;
    scratch.resize(static_cast<size_t>(units));
    pool.parallel_for(units, [&](int64_t begin, int64_t end) {
        std::vector<float>& scores = scratch[static_cast<size_t>(begin)];
        if (scores.size() < static_cast<size_t>(longest)) scores.resize(static_cast<size_t>(longest));
        for (int64_t unit = begin; unit < end; ++unit) {
            // Head-major: consecutive units are one head (then the next head
            // of the same KV group) over consecutive rows, so a stream's
            // keys and values stay in L2 from one row to the next instead of
            // being streamed again from L3 for every (row, head).
            const auto h = static_cast<int32_t>(unit / M), m = static_cast<int32_t>(unit % M);
            const AttentionRow& row = rows[m];
            const size_t kv = static_cast<size_t>(h / group) * row.head_stride;
            const size_t at = m * row_floats + static_cast<size_t>(h) * head_dim;
            kernels.attention_head(q + at, row.keys + kv, row.values + kv, row.first, row.last, head_dim, scale,
                                   scores.data(), out + at);
        }
    });
}

}  // namespace tf::model::kernels
