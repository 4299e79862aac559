// Where the KV pools keep a position, as plain C++17 that the kernels
// (rope_kv.cuh writes, attention.cuh reads, kv_copy.cuh copies) and their
// host emulation (tests/gpu/kv_addressing_test.cpp) share.
//
// A layer's pool is [block][kv_head][kBlockPositions][head_dim] bf16; a
// stream's block table lists its blocks in position order, so position p
// lives in table entry p / kBlockPositions at slot p % kBlockPositions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/kernels/host_device.h"
#include "gpu/row_inputs.h"

namespace tf::gpu::kernels {

// The KV pools' shape: keys and values, each [layer][block][kv_head][kBlockPositions][head_dim] bf16.
struct KvShape {
    int32_t heads = 0;
    int32_t kv_heads = 0;
    int32_t head_dim = 0;
    int64_t num_blocks = 0;
    // Elements of one (layer, block) in one pool.
    TF_HOST_DEVICE int64_t block_elems() const { return int64_t{kv_heads} * kBlockPositions * head_dim; }
};

// Element offset, in one layer's pool, of the head row (block, kv_head, slot).
TF_HOST_DEVICE inline size_t kv_row_offset(int64_t block, int32_t kv_head, int32_t slot, int32_t kv_heads,
                                           int32_t head_dim) {
    return ((static_cast<size_t>(block) * kv_heads + kv_head) * kBlockPositions + slot) * static_cast<size_t>(head_dim);
}

// Element offset of a whole block of a layer in the pools of all layers.
TF_HOST_DEVICE inline size_t kv_block_offset(int64_t layer, int64_t block, int64_t num_blocks, int64_t block_elems) {
    return static_cast<size_t>((layer * num_blocks + block) * block_elems);
}

TF_HOST_DEVICE constexpr int32_t kv_table_entry(int32_t position) { return position / kBlockPositions; }
TF_HOST_DEVICE constexpr int32_t kv_slot(int32_t position) { return position % kBlockPositions; }

// The kv head q head h reads (transformers' repeat_kv: consecutive q heads share one).
TF_HOST_DEVICE constexpr int32_t kv_head_of(int32_t h, int32_t heads, int32_t kv_heads) {
    return h / (heads / kv_heads);
}

// Split j (0 <= j < row.split_count) of a row's key range: it covers
// absolute positions [start, start + kAttentionSplit) cut to [first, position].
struct SplitKeys {
    int32_t start;  // a multiple of kAttentionSplit
    int32_t p0;     // first key
    int32_t p1;     // last key
};
TF_HOST_DEVICE inline SplitKeys split_keys(const DeviceRow& row, int32_t j) {
    const int32_t start = (row.split_begin + j) * kAttentionSplit;
    const int32_t p0 = row.first > start ? row.first : start;
    const int32_t last = start + kAttentionSplit - 1;
    return {start, p0, row.position < last ? row.position : last};
}

// Blocks one split can span, and the stream's table entry of the split's
// t-th, or -1 when that block lies past the row's position (never read).
constexpr int32_t kSplitBlocks = kAttentionSplit / kBlockPositions;
TF_HOST_DEVICE constexpr int32_t split_table_entry(const DeviceRow& row, int32_t split_start, int32_t t) {
    return (split_start / kBlockPositions + t) * kBlockPositions <= row.position ? split_start / kBlockPositions + t
                                                                                 : -1;
}

// The attention partial slot of split j of a row, for q head h.
TF_HOST_DEVICE inline size_t partial_slot(const DeviceRow& row, int32_t j, int32_t heads, int32_t h) {
    return static_cast<size_t>(row.partial_base + j) * heads + h;
}

static_assert(kAttentionSplit % kBlockPositions == 0, "splits are whole blocks");

}  // namespace tf::gpu::kernels
