// How the CUDA backend turns one Backend::forward into device work, as pure
// C++ (no CUDA header; unit-tested on the CPU in tests/gpu/plan_test.cpp):
//  - check_rows: the row rules, with the CPU backend's error texts;
//  - plan_chunks: forwards above max_rows rows (or above the attention
//    partials' room) run as several chunks, in row order;
//  - graph_bucket / split_workers: which captured CUDA graph a chunk replays;
//  - pack_chunk: the per-row device records (gpu/row_inputs.h), the packed
//    block tables and the output rows' samplers;
//  - plan_scratch: the device buffers a forward of up to max_rows rows uses.
// None of these choices changes a row's arithmetic: they only decide which
// rows travel together and how many blocks a kernel launches.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "gpu/kv_blocks.h"
#include "gpu/row_inputs.h"
#include "model/backend.h"
#include "model/model_config.h"

namespace tf::gpu {

// Largest forward (rows) that runs as a captured graph, and the bucket sizes.
constexpr int32_t kMaxGraphRows = 64;
// The most thread blocks one (row, head) gets for its attention splits.
constexpr int32_t kMaxSplitWorkers = 16;

// Device allocations are rounded up to this many bytes in the accounting.
constexpr size_t kAlign = 256;
inline size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The graph bucket for a chunk of `rows` rows: the smallest of 1, 2, 4, ...,
// 64 that holds them; 0 when rows > 64 (the chunk runs without a graph).
int32_t graph_bucket(int32_t rows);

// Thread blocks per (row, head) for a chunk whose rows span at most
// `max_splits` attention splits: a power of two, 1..kMaxSplitWorkers.
int32_t split_workers(int32_t max_splits);

// The first key a row at `position` attends to.
inline int32_t first_key(int32_t position, int32_t sliding_window) {
    if (sliding_window <= 0) return 0;
    const int32_t first = position - sliding_window + 1;
    return first > 0 ? first : 0;
}

// Attention splits of a row at `position`.
inline int32_t row_splits(int32_t position, int32_t sliding_window) {
    return position / kAttentionSplit - first_key(position, sliding_window) / kAttentionSplit + 1;
}

// Checks the rows (streams open, consecutive positions from each stream's
// length, capacity, token in the vocabulary, sampler index in range) and
// returns each stream's length after the forward, streams in order of first
// appearance. Throws std::invalid_argument as CpuBackend does.
std::vector<std::pair<int32_t, int32_t>> check_rows(std::span<const model::Row> rows, size_t samplers,
                                                    int32_t vocab, const KvBlocks& kv);

// [begin, end) row ranges: each at most max_rows rows and at most
// split_budget attention splits (a row alone may need up to its own count).
std::vector<std::pair<size_t, size_t>> plan_chunks(std::span<const model::Row> rows, int32_t max_rows,
                                                   int64_t split_budget, int32_t sliding_window);

struct ChunkInputs {
    std::vector<DeviceRow> rows;          // the chunk's rows, then padding rows up to the bucket
    std::vector<int32_t> tables;          // the block table of each stream of the chunk, each once
    std::vector<int32_t> out_rows;        // per output row: the row whose logits it is
    std::vector<DeviceSampler> samplers;  // per output row
    std::vector<int32_t> token_outputs;   // per sampling row, in row order: its output row
    std::vector<int32_t> logits_outputs;  // per want_logits row, in row order: its output row
    int32_t max_splits = 0;               // most splits of one row
    int32_t total_splits = 0;             // partial slots the chunk uses
};

// Packs a chunk. bucket > 0: the chunk runs as the graph of that many rows;
// padding rows are added (valid 0, no splits, sampler inactive) and every row
// is an output row (out_rows is the identity). bucket == 0: no padding, and
// only rows that sample or want logits are output rows, in row order.
// The streams' block tables must already cover the rows (KvBlocks::reserve).
ChunkInputs pack_chunk(std::span<const model::Row> rows, std::span<const model::SamplingParams> samplers,
                       const KvBlocks& kv, int32_t sliding_window, int32_t bucket);

// The scratch buffers of a forward, in bytes, for `rows` rows (max(max_rows,
// kMaxGraphRows): a graph bucket's padding rows need room too) and
// `split_budget` attention partials per head (enough for 8 splits a row, and
// for one row at the model's last position).
struct ScratchPlan {
    int32_t rows = 0;
    int64_t split_budget = 0;
    size_t x = 0;               // residual stream, fp32 [rows, hidden]
    size_t act = 0;             // GEMM input, bf16 [rows, max(hidden, q_dim, inter)]
    size_t qkv = 0;             // fp32 [rows, q_dim + 2 kv_dim]
    size_t gate_up = 0;         // fp32 [rows, 2 inter]
    size_t logits = 0;          // fp32 [rows, vocab]
    size_t partial_ml = 0;      // fp32 [split_budget, heads, 2]
    size_t partial_acc = 0;     // fp32 [split_budget, heads, head_dim]
    size_t sample_keys = 0;     // u64 [kSamplerBlocks, vocab]
    size_t sample_weights = 0;  // f64 [kSamplerBlocks, vocab]
    size_t tokens = 0;          // i32 [rows]
    size_t device_rows = 0;     // DeviceRow [rows]
    size_t out_rows = 0;        // i32 [rows]
    size_t samplers = 0;        // DeviceSampler [rows]

    // Every buffer rounded up to kAlign, added.
    size_t total() const;
};
ScratchPlan plan_scratch(const model::ModelConfig& config, int32_t max_rows);

}  // namespace tf::gpu
