// The per-row and per-output records one forward hands to the device.
// Plain C++17 structs with a fixed layout: the host packs them
// (gpu/row_pack.h) and copies them into fixed device buffers; the kernels
// (gpu/kernels/) read them there, so a captured CUDA graph stays valid while
// the rows change between replays.
#pragma once

#include <cstdint>

namespace tf::gpu {

// Positions per KV block. The pool hands out blocks of this many positions;
// a stream's block table lists its blocks in position order.
constexpr int32_t kBlockPositions = 16;

// Keys one attention split covers. A row's key range [first, position] is
// cut at multiples of this number of absolute positions, so how a row's
// attention is summed depends on its own range only, never on the batch.
constexpr int32_t kAttentionSplit = 256;

// Thread blocks of the device sampler; each handles output rows o, o +
// kSamplerBlocks, ... and owns `vocab` entries of key and weight scratch.
constexpr int32_t kSamplerBlocks = 64;

// One row of a forward on the device.
struct DeviceRow {
    int32_t token = 0;
    int32_t position = 0;     // the row's position; the last key it attends to
    int32_t first = 0;        // the first key it attends to (sliding window)
    int32_t table_offset = 0; // where its stream's block table starts in the packed tables
    int32_t split_begin = 0;  // first / kAttentionSplit
    int32_t split_count = 0;  // splits its key range spans; 0 for a padding row
    int32_t partial_base = 0; // its first slot in the attention partials
    int32_t valid = 0;        // 0: padding row of a graph bucket, writes nothing to the KV cache
};

// The sampler of one output row, with the position its token will take.
struct DeviceSampler {
    float temperature = 0.0f;  // <= 0: greedy
    int32_t top_k = 0;
    float top_p = 1.0f;
    float min_p = 0.0f;
    uint64_t seed = 0;
    int64_t position = 0;      // the sampled token's position (row position + 1)
    int32_t active = 0;        // 0: the row only returns logits (or is padding)
    int32_t pad = 0;
};

static_assert(sizeof(DeviceRow) == 32, "DeviceRow layout is shared with the device");
static_assert(sizeof(DeviceSampler) == 40, "DeviceSampler layout is shared with the device");

}  // namespace tf::gpu
