// The avx2 path of the quantized matmul with AVX-VNNI: VPDPBUSD ymm. q8_0's
// signed weights go in offset by 128 and the accumulator starts at -128 *
// (sum of the 4 activations), as in quant_avx512_vnni.cpp.
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>

#include "cpu/kernels/quant_matmul.h"
#include "cpu/kernels/vec16_avx2.h"

namespace tf::cpu::kernels::quant_avx2_vnni {

namespace {

using namespace avx2;  // V16 and its operations

#include "cpu/kernels/quant_ops_avx2.inc"

inline I32 dot_u8s8(const I32& acc, const I8& u, const I8& s) {
    return {_mm256_dpbusd_avx_epi32(acc.lo, u.lo, s.lo), _mm256_dpbusd_avx_epi32(acc.hi, u.hi, s.hi)};
}
// q8_0's stored q+128 against x, the -128 * sum bias in acc: VPDPBUSD as is.
constexpr bool kQ8Bias = true;
inline I32 dot_q8(const I32& acc, const I8& u, const I8& x) { return dot_u8s8(acc, u, x); }

constexpr bool kSmallSumsInInt16 = false;  // each dot_u8s8 adds into int32 as it goes

#include "cpu/kernels/quant_tiled_impl.inc"

}  // namespace

void matmul(const void* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end, float* out,
            int32_t ldo) {
    quant_matmul_any(xs, M, w, n_begin, n_end, out, ldo);
}

}  // namespace tf::cpu::kernels::quant_avx2_vnni
