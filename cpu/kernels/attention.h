// Causal attention with grouped KV heads (GQA), over each stream's KV cache.
// The kernel lives in attention_impl.inc (see the order it keeps there);
// this header has the launcher, which spreads (rows of a stream, query
// heads of one kv head) units over threads, and the double-precision
// reference for tests.
//
// Batch invariance: one (row, head) is one pass over keys first..position in
// an order fixed by key positions, whatever the batch and whichever rows
// and heads share the pass; the same code for prefill, decode and verify.
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

// Tests call the path's kernel through these: `heads` query heads of one
// row (q and out head after head) over keys first..last of a cache of
// element type `kv`.
inline void attention_heads(Isa isa, const float* q, int32_t heads, const void* keys, const void* values,
                            int32_t first, int32_t last, int32_t head_dim, float scale, float* out,
                            KvType kv = KvType::f32) {
    std::vector<AttentionQuery> queries;
    for (int32_t h = 0; h < heads; ++h) queries.push_back({q + h * head_dim, out + h * head_dim, last});
    std::vector<float> scratch(attention_scratch_floats(heads, last, head_dim));
    kernel_table(isa).attention(kv)(queries.data(), heads, keys, values, first, head_dim, scale, scratch.data());
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
// keys + h * head_stride bytes, in blocks of 16 positions [head_dim][16];
// its values at values + h * head_stride, position j at + j * head_dim
// elements.
struct AttentionRow {
    const char* keys = nullptr;
    const char* values = nullptr;
    size_t head_stride = 0;  // bytes
    int32_t first = 0;  // first key attended (0, or later with a sliding window)
    int32_t last = 0;   // the row's own position
};

// What the launcher keeps between calls.
struct AttentionScratch {
    struct Piece {
        int32_t begin, end;  // rows [begin, end) of one stream, the same first key
    };
    std::vector<Piece> pieces;
    std::vector<std::vector<float>> buffers;  // one per range of units a thread runs
};

// q: M rows of num_heads * head_dim; out likewise. Every row's cache holds
// elements of type `kv`.
//
// A unit is some rows of one stream (a piece) and some query heads of one
// kv head: its query vectors read that kv head's keys and values once
// together, so a verify round or a prefill chunk reads a stream's KV once
// per piece, not once per row. Pieces take as many rows as a call takes
// vectors, fewer when that would leave threads idle; heads split only when
// even one-row pieces leave threads idle. A vector's bits do not depend on
// the vectors it runs with, so these choices may follow M and the thread
// count.
inline void attention(const KernelTable& kernels, KvType kv_type, ThreadPool& pool, const float* q, int32_t M,
                      const AttentionRow* rows, int32_t num_heads, int32_t num_kv_heads, int32_t head_dim, float scale,
                      float* out, AttentionScratch& scratch) {
    assert(head_dim % 16 == 0 && num_heads % num_kv_heads == 0);
    const AttentionFn kernel = kernels.attention(kv_type);
    const int32_t group = num_heads / num_kv_heads;
    const int32_t rows_max = std::max<int32_t>(1, kAttentionMaxQueries / std::min(group, kAttentionMaxQueries));
    const int64_t pieces_wanted = (pool.size() + num_kv_heads - 1) / num_kv_heads;
    const auto rows_per_piece = static_cast<int32_t>(std::clamp<int64_t>(M / pieces_wanted, 1, rows_max));
    scratch.pieces.clear();
    for (int32_t begin = 0; begin < M;) {
        int32_t end = begin + 1;
        while (end < M && rows[end].keys == rows[begin].keys && rows[end].first == rows[begin].first) ++end;
        const int32_t n = (end - begin + rows_per_piece - 1) / rows_per_piece;  // even pieces of the run
        for (int32_t i = 0; i < n; ++i)
            scratch.pieces.push_back({begin + (end - begin) * i / n, begin + (end - begin) * (i + 1) / n});
        begin = end;
    }
    const auto pieces = static_cast<int64_t>(scratch.pieces.size());
    const int64_t units_unsplit = pieces * num_kv_heads;
    const int32_t fewest_parts = (group + kAttentionMaxQueries - 1) / kAttentionMaxQueries;
    const auto parts = static_cast<int32_t>(
        std::clamp<int64_t>((pool.size() + units_unsplit - 1) / units_unsplit, fewest_parts, group));
    const int32_t per_unit = (group + parts - 1) / parts, chunks = (group + per_unit - 1) / per_unit;
    const int64_t units = units_unsplit * chunks;
    const size_t row_floats = static_cast<size_t>(num_heads) * head_dim;
    scratch.buffers.resize(static_cast<size_t>(units));
    pool.parallel_for(units, [&](int64_t begin, int64_t end) {
        std::vector<float>& buffer = scratch.buffers[static_cast<size_t>(begin)];
        for (int64_t unit = begin; unit < end; ++unit) {
            // Head-major: consecutive units are the same heads over
            // consecutive pieces, so a kv head stays in L2 between them.
            const AttentionScratch::Piece piece = scratch.pieces[static_cast<size_t>(unit % pieces)];
            const auto part = static_cast<int32_t>(unit / pieces);
            const int32_t kv_head = part / chunks, h = kv_head * group + (part % chunks) * per_unit;
            const int32_t heads = std::min(per_unit, (kv_head + 1) * group - h);
            AttentionQuery queries[kAttentionMaxQueries];
            int32_t count = 0, max_last = 0;
            for (int32_t m = piece.begin; m < piece.end; ++m) {
                max_last = std::max(max_last, rows[m].last);
                for (int32_t i = 0; i < heads; ++i) {
                    const size_t at = m * row_floats + static_cast<size_t>(h + i) * head_dim;
                    queries[count++] = {q + at, out + at, rows[m].last};
                }
            }
            const size_t needed = attention_scratch_floats(count, max_last, head_dim);
            if (buffer.size() < needed) buffer.resize(needed);
            const AttentionRow& row = rows[piece.begin];
            const size_t kv = static_cast<size_t>(kv_head) * row.head_stride;
            kernel(queries, count, row.keys + kv, row.values + kv, row.first, head_dim, scale, buffer.data());
        }
    });
}

}  // namespace tf::cpu::kernels
