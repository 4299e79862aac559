#include "cpu/kv_cache.h"

#include <immintrin.h>

#include <cassert>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace tf::cpu {

using kernels::KvType;

namespace {

// kernels::f32_to_f16_bits of n floats (a multiple of 8) by VCVTPS2PH:
// its round to nearest even, quiet NaN with the top payload bits and
// overflow to infinity are the scalar function's, and an infinity then
// becomes the largest finite half as there. The scalar conversion, one
// element at a time and with branches, was 2.6% of a 16-row q8_0 forward
// (the KV cache is f16 by default).
[[gnu::target("avx,f16c")]] void f16_bits_f16c(const float* from, int32_t n, uint16_t* to) {
    const __m128i magnitude = _mm_set1_epi16(0x7FFF), infinity = _mm_set1_epi16(0x7C00);
    const __m128i largest = _mm_set1_epi16(0x7BFF);
    for (int32_t i = 0; i < n; i += 8) {
        const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(from + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m128i is_infinite = _mm_cmpeq_epi16(_mm_and_si128(half, magnitude), infinity);
        const __m128i finite = _mm_or_si128(_mm_andnot_si128(magnitude, half), largest);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(to + i), _mm_blendv_epi8(half, finite, is_infinite));
    }
}

const bool kHasF16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");

// n floats rounded to `type` (not q8_0), stored at `out` with elements
// `step` elements apart.
void store_elements(KvType type, const float* from, int32_t n, char* out, size_t step) {
    switch (type) {
        case KvType::f32:
            for (int32_t i = 0; i < n; ++i) std::memcpy(out + i * step * 4, from + i, 4);
            return;
        case KvType::f16:
            if (kHasF16c && n % 8 == 0 && n <= 512) {
                uint16_t halves[512];
                f16_bits_f16c(from, n, halves);
                if (step == 1) {
                    std::memcpy(out, halves, 2 * static_cast<size_t>(n));
                } else {
                    for (int32_t i = 0; i < n; ++i) std::memcpy(out + i * step * 2, &halves[i], 2);
                }
                return;
            }
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
        case KvType::q8_0:
            break;
    }
    assert(false && "q8_0 is quantized by blocks");
}

float load_float(const char* p) {
    float x;
    std::memcpy(&x, p, 4);
    return x;
}

}  // namespace

KvCache::KvCache(int32_t layers, int32_t kv_heads, int32_t head_dim, int32_t capacity, KvType type)
    : layers_(layers),
      kv_heads_(kv_heads),
      head_dim_(head_dim),
      capacity_(capacity),
      padded_capacity_((capacity + 15) / 16 * 16),
      type_(type),
      key_block_bytes_(kernels::kv_key_block_bytes(type, head_dim)),
      value_row_bytes_(kernels::kv_value_row_bytes(type, head_dim)),
      layer_bytes_(static_cast<size_t>(kv_heads) * padded_capacity_ * value_row_bytes_) {
    if (type == KvType::q8_0 && head_dim % kernels::kKvQuantBlock != 0) {
        throw std::invalid_argument("a q8_0 KV cache needs head_dim a multiple of 32, not " + std::to_string(head_dim));
    }
    // calloc: large blocks come as fresh zero pages, nothing to clear until
    // a position is used.
    memory_.reset(std::calloc(static_cast<size_t>(layers) * 2 * layer_bytes_ + 64, 1));
    if (!memory_) throw std::bad_alloc();
    const auto address = reinterpret_cast<uintptr_t>(memory_.get());
    data_ = reinterpret_cast<char*>((address + 63) / 64 * 64);
}

void KvCache::write(int32_t layer, int32_t position, const float* k, const float* v) {
    assert(position >= 0 && position < capacity_);
    const int32_t lane = position % 16;
    for (int32_t h = 0; h < kv_heads_; ++h) {
        char* block = key_block(key_data(layer) + h * head_stride(), position);
        char* value = value_data(layer) + h * head_stride() + static_cast<size_t>(position) * value_row_bytes_;
        const float* key = k + h * head_dim_;
        if (type_ == KvType::q8_0) {
            // The key's int8 lie 16 apart (one lane of its block), as do its scales.
            const int32_t blocks = head_dim_ / kernels::kKvQuantBlock;
            int8_t q[512];
            float scales[512 / kernels::kKvQuantBlock];
            assert(head_dim_ <= 512);
            kernels::quantize_q8_0(key, head_dim_, q, scales);
            for (int32_t d = 0; d < head_dim_; ++d) block[16 * d + lane] = static_cast<char>(q[d]);
            for (int32_t b = 0; b < blocks; ++b)
                std::memcpy(block + 16 * head_dim_ + 4 * (16 * b + lane), &scales[b], 4);
            kernels::quantize_q8_0(v + h * head_dim_, head_dim_, reinterpret_cast<int8_t*>(value), scales);
            std::memcpy(value + head_dim_, scales, 4 * static_cast<size_t>(blocks));
            continue;
        }
        const size_t element = kernels::kv_value_row_bytes(type_, head_dim_) / head_dim_;
        store_elements(type_, key, head_dim_, block + lane * element, 16);
        store_elements(type_, v + h * head_dim_, head_dim_, value, 1);
    }
}

float KvCache::key(int32_t layer, int32_t head, int32_t position, int32_t d) const {
    const char* block = key_block(keys(layer) + head * head_stride(), position);
    const int32_t lane = position % 16;
    switch (type_) {
        case KvType::f32: return load_float(block + 4 * (16 * d + lane));
        case KvType::f16:
        case KvType::bf16: {
            uint16_t bits;
            std::memcpy(&bits, block + 2 * (16 * d + lane), 2);
            return type_ == KvType::f16 ? kernels::f16_bits_to_f32(bits) : kernels::bf16_bits_to_f32(bits);
        }
        case KvType::q8_0: {
            const auto q = static_cast<int8_t>(block[16 * d + lane]);
            return static_cast<float>(q) *
                   load_float(block + 16 * head_dim_ + 4 * (16 * (d / kernels::kKvQuantBlock) + lane));
        }
    }
    return 0;
}

float KvCache::value(int32_t layer, int32_t head, int32_t position, int32_t d) const {
    const char* row = values(layer) + head * head_stride() + static_cast<size_t>(position) * value_row_bytes_;
    switch (type_) {
        case KvType::f32: return load_float(row + 4 * d);
        case KvType::f16:
        case KvType::bf16: {
            uint16_t bits;
            std::memcpy(&bits, row + 2 * d, 2);
            return type_ == KvType::f16 ? kernels::f16_bits_to_f32(bits) : kernels::bf16_bits_to_f32(bits);
        }
        case KvType::q8_0:
            return static_cast<float>(static_cast<int8_t>(row[d])) *
                   load_float(row + head_dim_ + 4 * (d / kernels::kKvQuantBlock));
    }
    return 0;
}

void KvCache::copy_prefix(const KvCache& from, int32_t length) {
    assert(from.layers_ == layers_ && from.kv_heads_ == kv_heads_ && from.head_dim_ == head_dim_);
    assert(from.type_ == type_);
    assert(length <= from.length_ && length <= capacity_);
    // Keys by whole blocks: a partial one brings lanes past `length` along,
    // which the kernel masks (finite, like any lane past a stream's length).
    const size_t key_bytes = static_cast<size_t>((length + 15) / 16) * key_block_bytes_;
    const size_t value_bytes = static_cast<size_t>(length) * value_row_bytes_;
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
