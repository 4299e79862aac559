// One stream's KV cache. Elements are fp32, 16-bit or q8_0 (kernels::KvType,
// kernels/kv_format.h): a key or value is rounded once, when write() stores
// it, and the attention kernel reads those bits back for every row that
// attends to it, the row that wrote it included: prefill, decode and verify
// see the same numbers. Per layer: keys then values, each kv head's after
// the other's, room for the capacity rounded up to 16 positions each:
//  - keys in blocks of 16 positions, each block [head_dim][16] (position j
//    is lane j mod 16 of block j / 16), so the attention kernel scores 16
//    keys with one FMA per dimension (kernels/attention_impl.inc); a q8_0
//    block has its int8 [head_dim][16], then its scales [head_dim / 32][16];
//  - values one row of head_dim elements per position, as the weighted sum
//    over positions reads them (q8_0: head_dim int8, then head_dim / 32
//    scales).
// Memory starts zeroed, so lanes of a block past the stream's length hold
// zeros or keys written before a truncate: finite, never read as scores
// (the kernel masks them), never NaN bits from fresh memory.
//
// Thread-safety: none; owned by the backend. Distinct positions may be
// written from distinct threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "cpu/kernels/kv_format.h"

namespace tf::cpu {

class KvCache {
public:
    KvCache(int32_t layers, int32_t kv_heads, int32_t head_dim, int32_t capacity,
            kernels::KvType type = kernels::KvType::f32);

    int32_t length() const { return length_; }
    int32_t capacity() const { return capacity_; }
    void set_length(int32_t length) { length_ = length; }
    kernels::KvType type() const { return type_; }

    // Bytes of one position's keys and values over every layer and head.
    static size_t bytes_per_token(int32_t layers, int32_t kv_heads, int32_t head_dim, kernels::KvType type) {
        return static_cast<size_t>(layers) * 2 * kv_heads * kernels::kv_value_row_bytes(type, head_dim);
    }

    const char* keys(int32_t layer) const { return data_ + static_cast<size_t>(layer) * 2 * layer_bytes_; }
    const char* values(int32_t layer) const { return keys(layer) + layer_bytes_; }
    // Bytes between kv heads, in keys and in values.
    size_t head_stride() const { return static_cast<size_t>(padded_capacity_) * value_row_bytes_; }
    // Where dimension d of the key at `position` lies within its block-major
    // layout, in elements (fp32 and 16-bit types; q8_0's int8 alike).
    static size_t key_index(int32_t position, int32_t d, int32_t head_dim) {
        return static_cast<size_t>(position / 16) * 16 * head_dim + static_cast<size_t>(d) * 16 + position % 16;
    }
    // The stored key or value element as fp32 (tests, tools).
    float key(int32_t layer, int32_t head, int32_t position, int32_t d) const;
    float value(int32_t layer, int32_t head, int32_t position, int32_t d) const;

    // Stores the key and value of every kv head at `position` of `layer`,
    // rounded to the cache's type; k and v hold kv_heads * head_dim floats,
    // head after head.
    void write(int32_t layer, int32_t position, const float* k, const float* v);

    // This cache := the first `length` positions of `from` (same layers,
    // heads, head_dim and type; any capacity that holds them).
    void copy_prefix(const KvCache& from, int32_t length);

private:
    char* key_data(int32_t layer) { return data_ + static_cast<size_t>(layer) * 2 * layer_bytes_; }
    char* value_data(int32_t layer) { return key_data(layer) + layer_bytes_; }
    // The key block (16 positions) or value row of `position` in one head's data.
    char* key_block(char* head_keys, int32_t position) const {
        return head_keys + static_cast<size_t>(position / 16) * key_block_bytes_;
    }
    const char* key_block(const char* head_keys, int32_t position) const {
        return head_keys + static_cast<size_t>(position / 16) * key_block_bytes_;
    }

    struct Free {
        void operator()(void* p) const { std::free(p); }
    };

    int32_t layers_, kv_heads_, head_dim_, capacity_, padded_capacity_;
    kernels::KvType type_;
    size_t key_block_bytes_, value_row_bytes_;
    int32_t length_ = 0;
    size_t layer_bytes_;  // one of keys or values of one layer
    std::unique_ptr<void, Free> memory_;
    char* data_;  // memory_ moved up to 64 bytes: every key block on its own cache lines
};

}  // namespace tf::cpu
