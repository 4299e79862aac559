// The scalar path of the quantized matmul, the reference the others match
// bit for bit: quant_impl.inc over plain arrays.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>

#include "model/kernels/quant_matmul.h"
#include "model/kernels/vec16_scalar.h"

namespace tf::model::kernels::quant_scalar {

namespace {

using namespace scalar;  // V16 and its operations

struct I8 {
    int8_t b[64];
};
struct I32 {
    int32_t l[16];
};
using W8 = I8;  // q8_0 weights as they are: the signed dot is plain

inline I8 load_i8(const int8_t* p) {
    I8 v;
    std::memcpy(v.b, p, 64);
    return v;
}
inline I32 load_i32(const int32_t* p) {
    I32 v;
    std::memcpy(v.l, p, 64);
    return v;
}
inline I32 zero_i32() { return I32{}; }
template <int S>
inline I32 neg_shl(const I32& v) {
    I32 r;
    for (int i = 0; i < 16; ++i) r.l[i] = -(v.l[i] * (1 << S));
    return r;
}
inline V16 to_float(const I32& v) {
    V16 r;
    for (int i = 0; i < 16; ++i) r.lane[i] = static_cast<float>(v.l[i]);
    return r;
}
inline I8 load_q8_halves(const int8_t* a, const int8_t* b) {
    I8 v;
    std::memcpy(v.b, a, 32);
    std::memcpy(v.b + 32, b, 32);
    return v;
}
// 16 bytes each of a and b: a's low nibbles, a's high ones, then b's.
inline I8 load_q4_halves(const uint8_t* a, const uint8_t* b) {
    I8 v;
    for (int i = 0; i < 16; ++i) {
        v.b[i] = static_cast<int8_t>(a[i] & 0xF);
        v.b[16 + i] = static_cast<int8_t>(a[i] >> 4);
        v.b[32 + i] = static_cast<int8_t>(b[i] & 0xF);
        v.b[48 + i] = static_cast<int8_t>(b[i] >> 4);
    }
    return v;
}
// 64 bytes' nibble S/4 (q4_k's repacked quants: S = 0 gives a half's first
// block pair, S = 4 its second).
template <int S>
inline I8 load_nibbles(const uint8_t* p) {
    I8 v;
    for (int i = 0; i < 64; ++i) v.b[i] = static_cast<int8_t>((p[i] >> S) & 0xF);
    return v;
}
// q6_k's 64 six-bit values of one block pair: nibble S/4 of ql[0..63], and
// 2 bits of qh[0..31] at bit S (first 32) and S+2 (last 32).
template <int S>
inline I8 load_q6(const uint8_t* ql, const uint8_t* qh) {
    I8 v;
    for (int i = 0; i < 64; ++i) {
        const int high = (qh[i % 32] >> (S + (i < 32 ? 0 : 2))) & 3;
        v.b[i] = static_cast<int8_t>(((ql[i] >> S) & 0xF) | (high << 4));
    }
    return v;
}
inline W8 prep_s8(const I8& w) { return w; }
inline I32 s8_bias(const I32&) { return I32{}; }
inline I32 dot_s8s8(const I32& bias, const W8& w, const I8& x) {
    I32 r;
    for (int l = 0; l < 16; ++l) {
        int32_t sum = bias.l[l];
        for (int i = 4 * l; i < 4 * l + 4; ++i) sum += w.b[i] * x.b[i];
        r.l[l] = sum;
    }
    return r;
}
inline I32 dot_u8s8(const I32& acc, const I8& u, const I8& s) {
    I32 r;
    for (int l = 0; l < 16; ++l) {
        int32_t sum = acc.l[l];
        for (int i = 4 * l; i < 4 * l + 4; ++i) sum += static_cast<uint8_t>(u.b[i]) * s.b[i];
        r.l[l] = sum;
    }
    return r;
}
inline V16 pair_scale(float a, float b) {
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = i < 8 ? a : b;
    return v;
}
inline V16 quad_scale(float a, float b, float c, float d) {
    const float s[4] = {a, b, c, d};
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = s[i / 4];
    return v;
}
inline float half(uint16_t h) { return fp16_to_float(h); }
inline V16 pair_scale_fp16(uint16_t a, uint16_t b) { return pair_scale(half(a), half(b)); }
// A k-quant super-block's scales, once per block (exact products): q6_k's
// d*scales[0..15].
inline V16 q6k_block_scales(const BlockQ6_K& b) {
    const float d = half(b.d);
    V16 v;
    for (int i = 0; i < 16; ++i) v.lane[i] = d * b.scales[i];
    return v;
}
// Pair j's per-lane scales out of them: lanes 0-7 take lane 2j, 8-15 lane
// 2j+1 (q4_k); lane l takes lane 4j + l/4 (q6_k).
inline V16 pair_lanes(const V16& all, int j) { return pair_scale(all.lane[2 * j], all.lane[2 * j + 1]); }
inline V16 quad_lanes(const V16& all, int j) {
    return quad_scale(all.lane[4 * j], all.lane[4 * j + 1], all.lane[4 * j + 2], all.lane[4 * j + 3]);
}

constexpr int kRowTile = 2, kColTile = 2;

// The tiled kernels' ops (quant_tiled_impl.inc), lane by lane.
inline I8 load_u8(const uint8_t* p) {
    I8 v;
    std::memcpy(v.b, p, 64);
    return v;
}
template <int S>
inline I8 nibbles(const I8& v) {
    I8 r;
    for (int i = 0; i < 64; ++i) r.b[i] = static_cast<int8_t>((static_cast<uint8_t>(v.b[i]) >> S) & 0xF);
    return r;
}
inline I8 bcast8(const int8_t* p) {
    I8 v;
    for (int i = 0; i < 64; ++i) v.b[i] = p[i % 8];
    return v;
}
inline I32 bcast_i32x2(const int32_t* p) {
    I32 v;
    for (int l = 0; l < 16; ++l) v.l[l] = p[l % 2];
    return v;
}
inline V16 bcast_f32x2(const float* p) {
    V16 v;
    for (int l = 0; l < 16; ++l) v.lane[l] = p[l % 2];
    return v;
}
template <int S>
inline I32 shl(const I32& v) {
    I32 r;
    for (int l = 0; l < 16; ++l) r.l[l] = v.l[l] * (1 << S);
    return r;
}
constexpr bool kQ8Bias = true;
inline I32 dot_q8(const I32& acc, const I8& u, const I8& x) { return dot_u8s8(acc, u, x); }
inline V16 lanes_fp16x8(const uint16_t* p) {
    uint16_t h[8];
    std::memcpy(h, p, 16);
    V16 v;
    for (int l = 0; l < 16; ++l) v.lane[l] = fp16_to_float(h[l / 2]);
    return v;
}
template <int S>
inline I32 sra(const I32& v) {
    I32 r;
    for (int l = 0; l < 16; ++l) r.l[l] = v.l[l] >> S;  // arithmetic (C++20)
    return r;
}
inline I32 bcast_i16x2(const int16_t* p) {
    I32 v;
    for (int l = 0; l < 16; ++l) v.l[l] = p[l % 2];
    return v;
}
template <int G>
inline I8 with_high(const I8& low, const I8& high) {
    I8 r;
    for (int i = 0; i < 64; ++i)
        r.b[i] = static_cast<int8_t>(low.b[i] | (((static_cast<uint8_t>(high.b[i]) >> (2 * G)) & 3) << 4));
    return r;
}
inline V16 lanes_i8x8(const int8_t* p) {
    V16 v;
    for (int l = 0; l < 16; ++l) v.lane[l] = static_cast<float>(p[l / 2]);
    return v;
}
inline V16 lanes_u8x8(const uint8_t* p) {
    V16 v;
    for (int l = 0; l < 16; ++l) v.lane[l] = static_cast<float>(p[l / 2]);
    return v;
}
constexpr int kTiledRows = 2, kTiledTiles = 2;

#include "model/kernels/quant_tiled_impl.inc"

}  // namespace

void matmul(const void* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end, float* out,
            int32_t ldo) {
    quant_matmul_any(xs, M, w, n_begin, n_end, out, ldo);
}

}  // namespace tf::model::kernels::quant_scalar
