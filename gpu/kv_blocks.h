// The KV cache's host side for the CUDA backend: how many blocks the device
// can hold (plan_kv) and which blocks each stream owns (KvBlocks). Pure C++
// with no CUDA header, compiled in every build and unit-tested on the CPU
// (tests/gpu/plan_test.cpp).
//
// The device pool is one array of blocks of kBlockPositions positions (keys
// and values of every layer and kv head); a stream owns a list of blocks in
// position order and grows it when a forward writes past its last block.
//
// Thread-safety: none; owned by the backend (one caller at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpu/row_inputs.h"

namespace tf::gpu {

struct KvPlanInput {
    size_t device_total_bytes = 0;  // the device's memory
    size_t device_free_bytes = 0;   // free before this backend allocates anything
    double memory_fraction = 0.9;   // share of device_total_bytes this backend may take
    size_t weight_bytes = 0;
    size_t scratch_bytes = 0;       // activations, partials, sampler scratch for max_rows
    size_t kv_bytes_per_position = 0;  // layers * 2 * kv_heads * head_dim * 2 (bf16 keys and values)
    size_t reserve_bytes = 0;       // kept free besides (graphs, the CUDA context's own allocations)
    int64_t max_tokens = 0;         // > 0: cap the pool at this many positions
};

struct KvPlan {
    int64_t blocks = 0;
    int64_t tokens = 0;             // blocks * kBlockPositions
    size_t kv_bytes = 0;            // blocks * kBlockPositions * kv_bytes_per_position
};

// The pool's size: what memory_fraction of the device leaves after weights
// and scratch, no more than is free, rounded down to whole blocks. Throws
// std::runtime_error saying what does not fit when the weights (or weights
// and scratch) leave no room for one block.
KvPlan plan_kv(const KvPlanInput& input);

// Blocks covering `positions` positions.
inline int32_t blocks_for(int32_t positions) { return (positions + kBlockPositions - 1) / kBlockPositions; }

class KvBlocks {
public:
    explicit KvBlocks(int64_t total_blocks);

    int64_t total_blocks() const { return total_blocks_; }
    int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }

    // Errors are std::invalid_argument worded as the CPU backend's.
    void open(int32_t stream, int32_t capacity);
    void close(int32_t stream);
    bool is_open(int32_t stream) const { return streams_.count(stream) != 0; }
    int32_t length(int32_t stream) const;
    int32_t capacity(int32_t stream) const;
    const std::vector<int32_t>& blocks(int32_t stream) const;

    // Makes every listed stream own the blocks for its new length (stream,
    // positions it will hold). Checks that the pool has room for all of them
    // before taking any: otherwise throws std::runtime_error "KV cache full:
    // ..." and changes nothing. Lengths are not changed (set_length does that
    // once the device has written the positions).
    void reserve(const std::vector<std::pair<int32_t, int32_t>>& new_lengths);
    void set_length(int32_t stream, int32_t length);

    // Drops positions >= length and returns blocks no longer needed to the pool.
    void truncate(int32_t stream, int32_t length);

    // Makes `to` hold the first `length` positions of `from`: frees or takes
    // blocks so that `to` owns blocks_for(length), sets its length, and
    // returns the (source block, target block) pairs whose contents the
    // device must copy (the last one may be partly filled; copying all of it
    // is harmless). Checks everything, including room in the pool, before
    // changing anything.
    std::vector<std::pair<int32_t, int32_t>> copy_prefix(int32_t from, int32_t to, int32_t length);

private:
    struct Stream {
        int32_t capacity = 0;
        int32_t length = 0;
        std::vector<int32_t> blocks;
    };
    Stream& get(int32_t stream);
    const Stream& get(int32_t stream) const;
    void resize(Stream& s, int32_t blocks);

    int64_t total_blocks_;
    std::vector<int32_t> free_;  // a stack; the lowest ids are taken first
    std::unordered_map<int32_t, Stream> streams_;
};

}  // namespace tf::gpu
