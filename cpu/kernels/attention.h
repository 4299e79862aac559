// Causal attention with grouped KV heads (GQA), over each stream's KV cache.
// The kernel lives in attention_impl.inc (see the order it keeps there);
// this header has the launcher, which spreads (row, query heads of one kv
// head) units over threads, and the double-precision reference for tests.
//
// Batch invariance: one (row, head) is one thread's pass over keys
// first..position in an order fixed by key positions, whatever the batch
// and whichever heads share the pass; the same code for prefill, decode and
// verify.
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "cpu/kernels/isa.h"
#include "cpu/thread_pool.h"

namespace tf::cpu::kernels {

// kernels

// Tests call the path's kernels through these.
inline void attention_heads(Isa isa, const float* q, int32_t heads, const float* keys, const float* values,
                            int32_t first, int32_t last, int32_t head_dim, float scale, float* scores, float* out) {
    kernel_table(isa).attention_heads(q, heads, keys, values, first, last, head_dim, scale, scores, out);
}
inline void exp16_values(Isa isa, const float* x, size_t n, float* out) { kernel_table(isa).exp16_values(x, n, out); }

// The reference for one (row, head): softmax in double over keys first..last.
// Unlike the kernel it reads plain rows: key j at keys + j * head_dim.
inline void attention_head_reference(const float* q, const float* keys, const float* values, int32_t first,
                                     int32_t last, int32_t head_dim, double scale, double* out) {
    std::vector<double> scores(static_cast<size_t>(last + 1));
    double max_score = -INFINITY;
    for (int32_t j = first; j <= last; ++j) {
        double s = 0;
        for (int32_t d = 0; d < head_dim; ++d)
            s += static_cast<double>(q[d]) * keys[static_cast<size_t>(j) * head_dim + d];
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

// Where one row's keys and values are (kv_cache.h): kv head h's keys at
// keys + h * head_stride, in blocks of 16 positions [head_dim][16]; its
// values at values + h * head_stride, position j at + j * head_dim.
struct AttentionRow {
    const float* keys = nullptr;
    const float* values = nullptr;
    size_t head_stride = 0;
    int32_t first = 0;  // first key attended (0, or later with a sliding window)
    int32_t last = 0;   // the row's own position
};

// q: M rows of num_heads * head_dim; out likewise. `scratch` holds score
// buffers, kept between calls.
inline void attention(const KernelTable& kernels, ThreadPool& pool, const float* q, int32_t M, const AttentionRow* rows,
                      int32_t num_heads, int32_t num_kv_heads, int32_t head_dim, float scale, float* out,
                      std::vector<std::vector<float>>& scratch) {
    assert(head_dim % 16 == 0 && num_heads % num_kv_heads == 0);
    int32_t longest = 0;  // score floats a head needs: whole blocks of 16 keys
    for (int32_t m = 0; m < M; ++m) longest = std::max(longest, (rows[m].last + 16) / 16 * 16);
    // A unit is one row and some query heads of one kv head: all of them
    // (its keys and values read once), unless that leaves threads idle (few
    // rows, few kv heads); then fewer. A head's bits do not depend on the
    // heads it runs with, so this choice may follow M and the thread count.
    const int32_t group = num_heads / num_kv_heads;
    const int64_t wanted_parts =
        (pool.size() + static_cast<int64_t>(M) * num_kv_heads - 1) / (static_cast<int64_t>(M) * num_kv_heads);
    const auto parts = static_cast<int32_t>(std::min<int64_t>(group, wanted_parts));
    const int32_t per_unit = (group + parts - 1) / parts, chunks = (group + per_unit - 1) / per_unit;
    const int64_t units = static_cast<int64_t>(M) * num_kv_heads * chunks;
    const size_t row_floats = static_cast<size_t>(num_heads) * head_dim;
    // One score buffer per chunk of units, which one thread runs at a time.
    scratch.resize(static_cast<size_t>(units));
    pool.parallel_for(units, [&](int64_t begin, int64_t end) {
        std::vector<float>& scores = scratch[static_cast<size_t>(begin)];
        const size_t needed = static_cast<size_t>(per_unit) * longest;
        if (scores.size() < needed) scores.resize(needed);
        for (int64_t unit = begin; unit < end; ++unit) {
            // Head-major: consecutive units are the same heads over
            // consecutive rows, so a stream's keys and values stay in L2
            // from one row to the next instead of coming again from L3.
            const auto m = static_cast<int32_t>(unit % M), part = static_cast<int32_t>(unit / M);
            const int32_t kv_head = part / chunks, h = kv_head * group + (part % chunks) * per_unit;
            const int32_t heads = std::min(per_unit, (kv_head + 1) * group - h);
            const AttentionRow& row = rows[m];
            const size_t kv = static_cast<size_t>(kv_head) * row.head_stride;
            const size_t at = m * row_floats + static_cast<size_t>(h) * head_dim;
            kernels.attention_heads(q + at, heads, row.keys + kv, row.values + kv, row.first, row.last, head_dim,
                            scale, scores.data(), out + at);
        }
    });
}

}  // namespace tf::cpu::kernels
