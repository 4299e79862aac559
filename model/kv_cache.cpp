#include "model/kv_cache.h"

#include <cassert>
#include <cstring>

namespace tf::model {

KvCache::KvCache(int32_t layers, int32_t kv_heads, int32_t head_dim, int32_t capacity)
    : layers_(layers),
      kv_heads_(kv_heads),
      head_dim_(head_dim),
      capacity_(capacity),
      layer_floats_(static_cast<size_t>(kv_heads) * capacity * head_dim),
      // Not zeroed: a position is written before any row reads it.
      data_(new float[static_cast<size_t>(layers) * 2 * layer_floats_]) {}

void KvCache::copy_prefix(const KvCache& from, int32_t length) {
    assert(from.layers_ == layers_ && from.kv_heads_ == kv_heads_ && from.head_dim_ == head_dim_);
    assert(length <= from.length_ && length <= capacity_);
    const size_t bytes = static_cast<size_t>(length) * head_dim_ * sizeof(float);
    for (int32_t layer = 0; layer < layers_; ++layer) {
        for (int32_t h = 0; h < kv_heads_; ++h) {
            std::memcpy(keys(layer) + h * head_stride(), from.keys(layer) + h * from.head_stride(), bytes);
            std::memcpy(values(layer) + h * head_stride(), from.values(layer) + h * from.head_stride(), bytes);
        }
    }
    length_ = length;
}

}  // namespace tf::model
