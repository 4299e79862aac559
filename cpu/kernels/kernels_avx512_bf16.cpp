// The avx512-bf16 path: kernels_impl.inc over vec16_avx512.h with the dot
// product of bf16 pairs done by VDPBF16PS itself, bf16 activations only. Its
// results equal the emulation in the other paths bit for bit
// (tests/cpu/kernels_test.cpp checks it wherever the instruction runs).
#include <algorithm>
#include <cassert>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "cpu/kernels/isa.h"
#include "cpu/kernels/packing.h"
#include "cpu/kernels/vec16_avx512.h"

namespace tf::cpu::kernels::avx512_bf16 {

using namespace avx512;  // the vector type and its operations

constexpr Isa kIsa = Isa::avx512_bf16;
inline V16 dot_pairs(const V16& acc, const P32& x, const P32& w) {
    return {_mm512_dpbf16_ps(acc.v, reinterpret_cast<const __m512bh&>(x.v), reinterpret_cast<const __m512bh&>(w.v))};
}

#define TF_KERNELS_BF16_ONLY
#include "cpu/kernels/kernels_impl.inc"
#undef TF_KERNELS_BF16_ONLY

// 1.5 * 2 + 2 * 0.25 with the pairs in opposite halves: 3.5 only if the
// instruction ran and added both products.
bool probe() {
    const __m512i x = _mm512_set1_epi32(static_cast<int>(0x40003FC0u));  // (1.5, 2.0)
    const __m512i w = _mm512_set1_epi32(static_cast<int>(0x3E804000u));  // (2.0, 0.25)
    const P32 xp{x}, wp{w};
    float out[16];
    store16(out, dot_pairs(zero16(), xp, wp));
    return out[0] == 3.5f && out[15] == 3.5f;
}

}  // namespace tf::cpu::kernels::avx512_bf16
