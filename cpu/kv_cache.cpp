#include "cpu/kv_cache.h"

#include <cassert>
#include <cstring>
#include <new>

namespace tf::cpu {

KvCache::KvCache(int32_t layers, int32_t kv_heads, int32_t head_dim, int32_t capacity)
    : layers_(layers),
      kv_heads_(kv_heads),
      head_dim_(head_dim),
      capacity_(capacity),
      padded_capacity_((capacity + 15) / 16 * 16),
      layer_floats_(static_cast<size_t>(kv_heads) * padded_capacity_ * head_dim),
      // calloc: large blocks come as fresh zero pages, nothing to clear
      // until a position is used.
      memory_(std::calloc(static_cast<size_t>(layers) * 2 * layer_floats_ * sizeof(float) + 64, 1)) {
    if (!memory_) throw std::bad_alloc();
    const auto address = reinterpret_cast<uintptr_t>(memory_.get());
    data_ = reinterpret_cast<float*>((address + 63) / 64 * 64);
}

void KvCache::write(int32_t layer, int32_t position, const float* k, const float* v) {
    assert(position >= 0 && position < capacity_);
    for (int32_t h = 0; h < kv_heads_; ++h) {
        float* keys_h = key_data(layer) + h * head_stride();
        for (int32_t d = 0; d < head_dim_; ++d) keys_h[key_index(position, d, head_dim_)] = k[h * head_dim_ + d];
        std::memcpy(value_data(layer) + h * head_stride() + static_cast<size_t>(position) * head_dim_,
                    v + h * head_dim_, static_cast<size_t>(head_dim_) * sizeof(float));
    }
}

void KvCache::copy_prefix(const KvCache& from, int32_t length) {
    assert(from.layers_ == layers_ && from.kv_heads_ == kv_heads_ && from.head_dim_ == head_dim_);
    assert(length <= from.length_ && length <= capacity_);
    // Keys by whole blocks: a partial one brings lanes past `length` along,
    // which the kernel masks (finite, like any lane past a stream's length).
    const size_t key_bytes = static_cast<size_t>((length + 15) / 16) * 16 * head_dim_ * sizeof(float);
    const size_t value_bytes = static_cast<size_t>(length) * head_dim_ * sizeof(float);
    for (int32_t layer = 0; layer < layers_; ++layer) {
        for (int32_t h = 0; h < kv_heads_; ++h) {
            std::memcpy(key_data(layer) + h * head_stride(), from.keys(layer) + h * from.head_stride(), key_bytes);
            std::memcpy(value_data(layer) + h * head_stride(), from.values(layer) + h * from.head_stride(),
                        value_bytes);
        }
    }
    length_ = length;
}

}  // namespace tf::cpu
