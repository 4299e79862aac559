#include "cpu/kv_cache.h"

#include <cassert>
#include <cstring>
#include <new>

namespace tf::cpu {

using kernels::KvType;

namespace {

// n floats rounded to `type`, stored at `out` (elements `step` apart).
void store_elements(KvType type, const float* from, int32_t n, char* out, size_t step) {
    switch (type) {
        case KvType::f32:
            for (int32_t i = 0; i < n; ++i) std::memcpy(out + i * step * 4, from + i, 4);
            return;
        case KvType::f16:
            for (int32_t i = 0; i < n; ++i) {
                const uint16_t bits = kernels::f32_to_f16_bits(from[i]);
                std::memcpy(out + i * step * 2, &bits, 2);
            }
            return;
        case KvType::bf16:
            for (int32_t i = 0; i < n; ++i) {
                const uint16_t bits = kernels::f32_to_bf16_bits(from[i]);
                std::memcpy(out + i * step * 2, &bits, 2);
            }
            return;
    }
}

}  // namespace

KvCache::KvCache(int32_t layers, int32_t kv_heads, int32_t head_dim, int32_t capacity, KvType type)
    : layers_(layers),
      kv_heads_(kv_heads),
      head_dim_(head_dim),
      capacity_(capacity),
      padded_capacity_((capacity + 15) / 16 * 16),
      type_(type),
      element_bytes_(kernels::kv_element_bytes(type)),
      layer_bytes_(static_cast<size_t>(kv_heads) * padded_capacity_ * head_dim * element_bytes_),
      // calloc: large blocks come as fresh zero pages, nothing to clear
      // until a position is used.
      memory_(std::calloc(static_cast<size_t>(layers) * 2 * layer_bytes_ + 64, 1)) {
    if (!memory_) throw std::bad_alloc();
    const auto address = reinterpret_cast<uintptr_t>(memory_.get());
    data_ = reinterpret_cast<char*>((address + 63) / 64 * 64);
}

void KvCache::write(int32_t layer, int32_t position, const float* k, const float* v) {
    assert(position >= 0 && position < capacity_);
    for (int32_t h = 0; h < kv_heads_; ++h) {
        // A key's dimensions lie 16 elements apart (one lane of its block).
        char* key = key_data(layer) + h * head_stride() + key_index(position, 0, head_dim_) * element_bytes_;
        store_elements(type_, k + h * head_dim_, head_dim_, key, 16);
        char* value = value_data(layer) + h * head_stride() + static_cast<size_t>(position) * head_dim_ * element_bytes_;
        store_elements(type_, v + h * head_dim_, head_dim_, value, 1);
    }
}

float KvCache::element(const char* head_data, size_t index) const {
    if (type_ == KvType::f32) {
        float x;
        std::memcpy(&x, head_data + index * 4, 4);
        return x;
    }
    uint16_t bits;
    std::memcpy(&bits, head_data + index * 2, 2);
    return type_ == KvType::f16 ? kernels::f16_bits_to_f32(bits) : kernels::bf16_bits_to_f32(bits);
}

float KvCache::key(int32_t layer, int32_t head, int32_t position, int32_t d) const {
    return element(keys(layer) + head * head_stride(), key_index(position, d, head_dim_));
}

float KvCache::value(int32_t layer, int32_t head, int32_t position, int32_t d) const {
    return element(values(layer) + head * head_stride(), static_cast<size_t>(position) * head_dim_ + d);
}

void KvCache::copy_prefix(const KvCache& from, int32_t length) {
    assert(from.layers_ == layers_ && from.kv_heads_ == kv_heads_ && from.head_dim_ == head_dim_);
    assert(from.type_ == type_);
    assert(length <= from.length_ && length <= capacity_);
    // Keys by whole blocks: a partial one brings lanes past `length` along,
    // which the kernel masks (finite, like any lane past a stream's length).
    const size_t key_bytes = static_cast<size_t>((length + 15) / 16) * 16 * head_dim_ * element_bytes_;
    const size_t value_bytes = static_cast<size_t>(length) * head_dim_ * element_bytes_;
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
