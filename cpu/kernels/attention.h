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

// `count` query vectors of one kv head (each up to its own last key) on
// one thread: fresh states, every block in one kernel call, then o / l into
// each vector's out. `states` holds count * attention_state_floats(head_dim)
// floats, `scratch` attention_scratch_floats(head_dim). The launcher runs
// a unit this way; tests call it through attention_queries.
inline void attention_unit(const KernelTable& table, KvType kv, const AttentionQuery* queries, int32_t count,
                           const void* keys, const void* values, int32_t first, int32_t head_dim, float scale,
                           float* states, float* scratch) {
    const size_t state_floats = attention_state_floats(head_dim);
    int32_t max_last = first;
    for (int32_t v = 0; v < count; ++v) {
        reset_attention_state(states + v * state_floats, head_dim);
        max_last = std::max(max_last, queries[v].last);
    }
    table.attention(kv)(queries, count, keys, values, first, head_dim, scale, first / kAttentionBlock,
                        max_last / kAttentionBlock + 1, states, false, scratch);
    for (int32_t v = 0; v < count; ++v) table.attention_finish(states + v * state_floats, head_dim, queries[v].out);
}

// Tests call the path's kernel through these. attention_queries: one
// attention_unit on a path's kernel table.
inline void attention_queries(Isa isa, const AttentionQuery* queries, int32_t count, const void* keys,
                              const void* values, int32_t first, int32_t head_dim, float scale,
                              KvType kv = KvType::f32) {
    std::vector<float> states(count * attention_state_floats(head_dim)), scratch(attention_scratch_floats(head_dim));
    attention_unit(kernel_table(isa), kv, queries, count, keys, values, first, head_dim, scale, states.data(),
                   scratch.data());
}
// `heads` query heads of one row (q and out head after head) over keys
// first..last.
inline void attention_heads(Isa isa, const float* q, int32_t heads, const void* keys, const void* values, int32_t first,
                            int32_t last, int32_t head_dim, float scale, float* out, KvType kv = KvType::f32) {
    std::vector<AttentionQuery> queries;
    for (int32_t h = 0; h < heads; ++h) queries.push_back({q + h * head_dim, out + h * head_dim, last});
    attention_queries(isa, queries.data(), heads, keys, values, first, head_dim, scale, kv);
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
    int32_t first = 0;       // first key attended (0, or later with a sliding window)
    int32_t last = 0;        // the row's own position
};

// What the launcher keeps between calls.
struct AttentionScratch {
    struct Piece {
        int32_t begin, end;  // rows [begin, end) of one stream, the same first key
    };
    struct Unit {
        AttentionQuery queries[kAttentionMaxQueries];
        int32_t count = 0;
        const char *keys = nullptr, *values = nullptr;
        int32_t first = 0, block_begin = 0, block_end = 0;
        size_t block_states = 0;  // where its per-block states start in `blocks`, in floats
    };
    std::vector<Piece> pieces;
    std::vector<Unit> units;
    std::vector<float> blocks;  // per-block states when blocks go to threads
};

// q: M rows of num_heads * head_dim; out likewise. Every row's cache holds
// elements of type `kv`.
//
// A unit is some rows of one stream (a piece) and some query heads of one
// kv head: its query vectors read that kv head's keys and values once
// together, so a verify round or a prefill chunk reads a stream's KV once
// per piece, not once per row. Pieces take as many rows as a call takes
// vectors, fewer when that would leave threads idle; heads split only when
// even one-row pieces leave threads idle. When units are still fewer than
// threads (decode of a long row with few kv heads), the units' key blocks
// go to the threads, each block's state kept apart and folded in block
// order afterwards: the operations one thread would do, so the same bits.
// A vector's bits do not depend on the vectors it runs with, so all these
// choices may follow M and the thread count.
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
    const size_t state_floats = attention_state_floats(head_dim);

    // The units, head-major: consecutive units are the same heads over
    // consecutive pieces, so a kv head stays in L2 between them.
    scratch.units.resize(static_cast<size_t>(units));
    int64_t blocks = 0;
    size_t block_floats = 0;
    for (int64_t u = 0; u < units; ++u) {
        AttentionScratch::Unit& unit = scratch.units[static_cast<size_t>(u)];
        const AttentionScratch::Piece piece = scratch.pieces[static_cast<size_t>(u % pieces)];
        const auto part = static_cast<int32_t>(u / pieces);
        const int32_t kv_head = part / chunks, h = kv_head * group + (part % chunks) * per_unit;
        const int32_t heads = std::min(per_unit, (kv_head + 1) * group - h);
        unit.count = 0;
        int32_t max_last = 0;
        for (int32_t m = piece.begin; m < piece.end; ++m) {
            max_last = std::max(max_last, rows[m].last);
            for (int32_t i = 0; i < heads; ++i) {
                const size_t at = m * row_floats + static_cast<size_t>(h + i) * head_dim;
                unit.queries[unit.count++] = {q + at, out + at, rows[m].last};
            }
        }
        const AttentionRow& row = rows[piece.begin];
        const size_t kv = static_cast<size_t>(kv_head) * row.head_stride;
        unit.keys = row.keys + kv;
        unit.values = row.values + kv;
        unit.first = row.first;
        unit.block_begin = row.first / kAttentionBlock;
        unit.block_end = max_last / kAttentionBlock + 1;
        unit.block_states = block_floats;
        blocks += unit.block_end - unit.block_begin;
        block_floats += static_cast<size_t>(unit.block_end - unit.block_begin) * unit.count * state_floats;
    }
    const size_t kernel_floats = attention_scratch_floats(head_dim);
    const size_t buffer_floats = kernel_floats + kAttentionMaxQueries * state_floats;
    // Each thread's kernel scratch and unit states, kept for its next call
    // (threads x buffer_floats in all, bounded whatever the chunking).
    auto thread_buffer = [buffer_floats]() -> float* {
        thread_local std::vector<float> buffer;
        if (buffer.size() < buffer_floats) buffer.resize(buffer_floats);
        return buffer.data();
    };

    if (units >= pool.size() || blocks == units) {
        pool.parallel_for(units, [&](int64_t begin, int64_t end) {
            float* buffer = thread_buffer();
            float* states = buffer + kernel_floats;
            for (int64_t u = begin; u < end; ++u) {
                const AttentionScratch::Unit& unit = scratch.units[static_cast<size_t>(u)];
                attention_unit(kernels, kv_type, unit.queries, unit.count, unit.keys, unit.values, unit.first, head_dim,
                               scale, states, buffer);
            }
        });
        return;
    }
    // Every (unit, block) is a task; a thread's range covers consecutive
    // blocks of one or more units.
    scratch.blocks.resize(block_floats);
    pool.parallel_for(blocks, [&](int64_t begin, int64_t end) {
        float* buffer = thread_buffer();
        int64_t at = 0;  // the first block of unit u, counted over every unit
        for (const AttentionScratch::Unit& unit : scratch.units) {
            const int64_t n = unit.block_end - unit.block_begin;
            const int64_t lo = std::max(begin, at), hi = std::min(end, at + n);
            if (lo < hi) {
                float* states = scratch.blocks.data() + unit.block_states + (lo - at) * unit.count * state_floats;
                kernel(unit.queries, unit.count, unit.keys, unit.values, unit.first, head_dim, scale,
                       unit.block_begin + static_cast<int32_t>(lo - at),
                       unit.block_begin + static_cast<int32_t>(hi - at), states, true, buffer);
            }
            at += n;
        }
    });
    pool.parallel_for(units, [&](int64_t begin, int64_t end) {
        float* states = thread_buffer() + kernel_floats;
        for (int64_t u = begin; u < end; ++u) {
            const AttentionScratch::Unit& unit = scratch.units[static_cast<size_t>(u)];
            for (int32_t v = 0; v < unit.count; ++v) {
                float* state = states + v * state_floats;
                reset_attention_state(state, head_dim);
                // Blocks past the vector's last key hold nothing of it.
                const int32_t blocks_of_v = unit.queries[v].last / kAttentionBlock + 1 - unit.block_begin;
                for (int32_t b = 0; b < blocks_of_v; ++b)
                    kernels.attention_merge(scratch.blocks.data() + unit.block_states +
                                                (static_cast<size_t>(b) * unit.count + v) * state_floats,
                                            state, head_dim);
            }
            for (int32_t v = 0; v < unit.count; ++v)
                kernels.attention_finish(states + v * state_floats, head_dim, unit.queries[v].out);
        }
    });
}

}  // namespace tf::cpu::kernels
