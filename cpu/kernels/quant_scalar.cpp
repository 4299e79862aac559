// The scalar path of the quantized matmul, the reference the others match
// bit for bit: quant_tiled_impl.inc over plain arrays, lane by lane.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <memory>

#include "cpu/kernels/quant_matmul.h"
#include "cpu/kernels/vec16_scalar.h"

namespace tf::cpu::kernels::quant_scalar {

namespace {

using namespace scalar;  // V16 and its operations

struct I8 {
    int8_t b[64];
};
struct I32 {
    int32_t l[16];
};
inline I32 zero_i32() { return I32{}; }
inline V16 to_float(const I32& v) {
    V16 r;
    for (int i = 0; i < 16; ++i) r.lane[i] = static_cast<float>(v.l[i]);
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
inline I8 bcast4(const int8_t* p) {
    I8 v;
    for (int i = 0; i < 64; ++i) v.b[i] = p[i % 4];
    return v;
}
inline I32 bcast_i32(int32_t x) {
    I32 v;
    for (int l = 0; l < 16; ++l) v.l[l] = x;
    return v;
}
constexpr bool kQ8Bias = true;
inline I32 dot_q8(const I32& acc, const I8& u, const I8& x) { return dot_u8s8(acc, u, x); }
inline V16 lanes_fp16(const uint16_t* p) {
    V16 v;
    for (int l = 0; l < 16; ++l) v.lane[l] = model::fp16_to_float(p[l]);
    return v;
}
template <int G>
inline I8 with_high(const I8& low, const I8& high) {
    I8 r;
    for (int i = 0; i < 64; ++i)
        r.b[i] = static_cast<int8_t>(low.b[i] | (((static_cast<uint8_t>(high.b[i]) >> (2 * G)) & 3) << 4));
    return r;
}
template <int G>
inline I8 with_bit(const I8& low, const I8& high) {
    I8 r;
    for (int i = 0; i < 64; ++i) r.b[i] = static_cast<int8_t>(low.b[i] | (((static_cast<uint8_t>(high.b[i]) >> G) & 1) << 4));
    return r;
}
inline V16 lanes_i8(const int8_t* p) {
    V16 v;
    for (int l = 0; l < 16; ++l) v.lane[l] = static_cast<float>(p[l]);
    return v;
}
inline V16 lanes_u8(const uint8_t* p) {
    V16 v;
    for (int l = 0; l < 16; ++l) v.lane[l] = static_cast<float>(p[l]);
    return v;
}
constexpr int kTiledRows = 2, kTiledTiles = 2;
// Whether q8_0's tiles loop over the weight groups outside the rows
// (quant_tiled_impl.inc, run_group_outer).
constexpr bool kQ8GroupOuter = false;
constexpr bool kNibbleGroupOuter = false;  // the same for q4_0 and q5_0

constexpr bool kSmallSumsInInt16 = false;  // each dot_u8s8 adds into int32 as it goes
constexpr bool kDotBroadcastsFromMemory = false;

// One row at a time (quant_tiled_impl.inc, paired_dot_groups): the paths
// that sum small weights in int16 gain nothing from pairing (q4_k_m 16 rows
// on avx2 went 90 -> 104 ms with it), 16-register paths have no room for
// it, and the scalar reference needs no speed.
constexpr int kRowsInterleaved = 1;

#include "cpu/kernels/quant_tiled_impl.inc"

}  // namespace

void matmul(const void* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end, float* out,
            int32_t ldo) {
    quant_matmul_any(xs, M, w, n_begin, n_end, out, ldo);
}

}  // namespace tf::cpu::kernels::quant_scalar
