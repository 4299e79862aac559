// One stream's KV cache in fp32 (the precision the attention computes in,
// so a cached key is exactly the key a recomputation would produce). Layout
// per layer: keys then values, each [kv_head][capacity][head_dim], so one
// head's keys are contiguous for the attention pass over them.
//
// Thread-safety: none; owned by the backend.
#pragma once

#include <cstdint>
#include <memory>

namespace tf::model {

class KvCache {
public:
    KvCache(int32_t layers, int32_t kv_heads, int32_t head_dim, int32_t capacity);

    int32_t length() const { return length_; }
    int32_t capacity() const { return capacity_; }
    void set_length(int32_t length) { length_ = length; }

    float* keys(int32_t layer) { return data_.get() + static_cast<size_t>(layer) * 2 * layer_floats_; }
    float* values(int32_t layer) { return keys(layer) + layer_floats_; }
    const float* keys(int32_t layer) const { return data_.get() + static_cast<size_t>(layer) * 2 * layer_floats_; }
    const float* values(int32_t layer) const { return keys(layer) + layer_floats_; }
    // Floats between kv heads.
    size_t head_stride() const { return static_cast<size_t>(capacity_) * head_dim_; }

    // This cache := the first `length` positions of `from` (same shape).
    void copy_prefix(const KvCache& from, int32_t length);

private:
    int32_t layers_, kv_heads_, head_dim_, capacity_;
    int32_t length_ = 0;
    size_t layer_floats_;  // one of keys or values of one layer
    std::unique_ptr<float[]> data_;
};

}  // namespace tf::model
