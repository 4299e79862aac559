// The 16-lane vector as plain floats: the reference the SIMD paths must match
// bit for bit. std::fma rounds once, as the FMA instructions do.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "cpu/kernels/kv_format.h"

namespace tf::cpu::kernels::scalar {

struct V16 {
    float lane[16];
};

inline V16 zero16() {
    V16 v;
    for (float& x : v.lane) x = 0.0f;
    return v;
}
inline V16 load16(const float* p) {
    V16 v;
    std::memcpy(v.lane, p, sizeof v.lane);
    return v;
}
inline void store16(float* p, const V16& v) { std::memcpy(p, v.lane, sizeof v.lane); }
// 16 KV cache elements of 16 bits, widened to fp32 exactly (kv_format.h).
inline V16 load16_f16(const uint16_t* p) {
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = f16_bits_to_f32(p[i]);
    return v;
}
inline V16 load16_bf16(const uint16_t* p) {
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = bf16_bits_to_f32(p[i]);
    return v;
}
// 16 int8 as fp32 (exact).
inline V16 load16_i8(const int8_t* p) {
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = static_cast<float>(p[i]);
    return v;
}
inline V16 broadcast16(float x) {
    V16 v;
    for (float& l : v.lane) l = x;
    return v;
}
// a * b + c, rounded once.
inline V16 fma16(const V16& a, const V16& b, const V16& c) {
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = std::fma(a.lane[i], b.lane[i], c.lane[i]);
    return v;
}
// 32 bf16 values w[0..31] as fp32: even = w[0], w[2], ..., odd = w[1], w[3], ...
inline void load_bf16_pairs(const uint16_t* w, V16& even, V16& odd) {
    for (int i = 0; i < 16; ++i) {
        uint32_t e = static_cast<uint32_t>(w[2 * i]) << 16, o = static_cast<uint32_t>(w[2 * i + 1]) << 16;
        std::memcpy(&even.lane[i], &e, 4);
        std::memcpy(&odd.lane[i], &o, 4);
    }
}
// The one reduction tree: 16 -> 8 (lane i + lane i+8) -> 4 -> 2 -> 1.
inline float reduce16(const V16& v) {
    float t[8];
    for (int i = 0; i < 8; ++i) t[i] = v.lane[i] + v.lane[i + 8];
    for (int i = 0; i < 4; ++i) t[i] = t[i] + t[i + 4];
    for (int i = 0; i < 2; ++i) t[i] = t[i] + t[i + 2];
    return t[0] + t[1];
}
// reduce16 of 16 vectors: sums[i] = reduce16(v[i]).
inline void reduce16x16(const V16* v, float* sums) {
    for (int i = 0; i < 16; ++i) sums[i] = reduce16(v[i]);
}

// bf16 dot ops: 32 bf16 values as they lie in memory (16 pairs), and the
// VDPBF16PS step on them, emulated. Per lane l the accumulator takes the odd
// product x[2l+1]*w[2l+1], then the even one, each an FMA rounded once
// (exact products: 8-bit significands); bf16 inputs below 2^-126 count as
// zero and results below it are flushed to a zero of their sign, as the
// instruction does.
struct P32 {
    uint16_t h[32];
};
inline P32 loadp32(const uint16_t* p) {
    P32 v;
    std::memcpy(v.h, p, sizeof v.h);
    return v;
}
inline float flush_subnormal(float x) { return std::fabs(x) < 0x1p-126f ? std::copysign(0.0f, x) : x; }
inline void unpack_pairs(const P32& p, V16& even, V16& odd) {
    load_bf16_pairs(p.h, even, odd);
    for (int i = 0; i < 16; ++i) {
        even.lane[i] = flush_subnormal(even.lane[i]);
        odd.lane[i] = flush_subnormal(odd.lane[i]);
    }
}
inline V16 dot_pairs(const V16& acc, const P32& x, const P32& w) {
    V16 xe, xo, we, wo, v;
    unpack_pairs(x, xe, xo);
    unpack_pairs(w, we, wo);
    for (int i = 0; i < 16; ++i) {
        const float odd = flush_subnormal(std::fma(xo.lane[i], wo.lane[i], acc.lane[i]));
        v.lane[i] = flush_subnormal(std::fma(xe.lane[i], we.lane[i], odd));
    }
    return v;
}

// attention ops. Each is exactly rounded per lane (or pure selection or
// integer work), so the SIMD paths can match it bit for bit. max16 and
// min16 keep the x86 rule: the second operand unless the first compares
// greater (less), so a NaN in either yields the second.
inline V16 add16(const V16& a, const V16& b) {
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = a.lane[i] + b.lane[i];
    return v;
}
inline V16 sub16(const V16& a, const V16& b) {
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = a.lane[i] - b.lane[i];
    return v;
}
inline V16 mul16(const V16& a, const V16& b) {
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = a.lane[i] * b.lane[i];
    return v;
}
inline V16 div16(const V16& a, const V16& b) {
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = a.lane[i] / b.lane[i];
    return v;
}
inline V16 max16(const V16& a, const V16& b) {
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = a.lane[i] > b.lane[i] ? a.lane[i] : b.lane[i];
    return v;
}
inline V16 min16(const V16& a, const V16& b) {
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = a.lane[i] < b.lane[i] ? a.lane[i] : b.lane[i];
    return v;
}
// The largest lane, by reduce16's tree with max16 in place of +.
inline float max_lane16(const V16& v) {
    float t[8];
    for (int i = 0; i < 8; ++i) t[i] = v.lane[i] > v.lane[i + 8] ? v.lane[i] : v.lane[i + 8];
    for (int i = 0; i < 4; ++i) t[i] = t[i] > t[i + 4] ? t[i] : t[i + 4];
    for (int i = 0; i < 2; ++i) t[i] = t[i] > t[i + 2] ? t[i] : t[i + 2];
    return t[0] > t[1] ? t[0] : t[1];
}
// Lanes lo <= i < hi keep v; the others become `fill` (bits copied, so
// whatever v held there, NaN included, is gone). 0 <= lo <= hi <= 16.
inline V16 keep_lanes16(const V16& v, int32_t lo, int32_t hi, float fill) {
    V16 r;
    for (int i = 0; i < 16; ++i) r.lane[i] = i >= lo && i < hi ? v.lane[i] : fill;
    return r;
}
// p * 2^n, rounded once, for lanes of n holding integers in [-150, 128]
// (whatever p's exponent, a subnormal result is rounded correctly): the
// power is split as 2^(n>>1) * 2^(n - (n>>1)), both normal, and the first
// product is exact for p in [0.5, 2]. Truncating float -> int as CVTTPS2DQ
// does, NaN giving INT32_MIN, so the other paths agree on every input.
inline V16 scale_pow2_16(const V16& p, const V16& n) {
    V16 v;
    for (int i = 0; i < 16; ++i) {
        const float x = n.lane[i];
        const int32_t k = x == x && std::fabs(x) < 0x1p31f ? static_cast<int32_t>(x) : INT32_MIN;
        const int32_t k1 = k >> 1;
        const int32_t k2 = static_cast<int32_t>(static_cast<uint32_t>(k) - static_cast<uint32_t>(k1));
        const uint32_t b1 = (static_cast<uint32_t>(k1) + 127u) << 23, b2 = (static_cast<uint32_t>(k2) + 127u) << 23;
        float s1, s2;
        std::memcpy(&s1, &b1, 4);
        std::memcpy(&s2, &b2, 4);
        v.lane[i] = p.lane[i] * s1 * s2;
    }
    return v;
}
// One lane group of 16 (see vec16_avx2.h).
constexpr int kLaneGroups = 1;
using LaneGroup = V16;
inline LaneGroup zero_group() { return zero16(); }
inline LaneGroup load_group(const float* p) { return load16(p); }
inline LaneGroup fma_group(const LaneGroup& a, const LaneGroup& b, const LaneGroup& c) { return fma16(a, b, c); }
inline void store_group(float* p, const LaneGroup& x) { store16(p, x); }
inline LaneGroup get_group(const V16& v, int) { return v; }
// How many V16 accumulators attention keeps in flight (blocks scored side
// by side, slices of the value sum): loop shape only, the order of every
// sum is fixed by key positions.
constexpr int kAttentionAccumulators = 8;

}  // namespace tf::cpu::kernels::scalar
