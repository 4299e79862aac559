// The 16-lane vector as plain floats: the reference the SIMD paths must match
// bit for bit. std::fma rounds once, as the FMA instructions do.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tf::model::kernels::scalar {

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

}  // namespace tf::model::kernels::scalar
