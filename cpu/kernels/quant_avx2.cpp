// The avx2 path of the quantized matmul without VNNI: the u8 x s8 4-way dot
// as VPMADDUBSW + VPMADDWD, exact for every format here.
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>

#include "cpu/kernels/quant_matmul.h"
#include "cpu/kernels/vec16_avx2.h"

namespace tf::cpu::kernels::quant_avx2 {

namespace {

using namespace avx2;  // V16 and its operations

#include "cpu/kernels/quant_ops_avx2.inc"

inline __m256i dot8(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}
inline I32 dot_u8s8(const I32& acc, const I8& u, const I8& s) { return {dot8(acc.lo, u.lo, s.lo), dot8(acc.hi, u.hi, s.hi)}; }
// q8_0's stored q+128 would overflow VPMADDUBSW's int16 pairs: back to
// q = stored ^ 0x80, then |q| times x with q's sign (VPSIGNB), no bias;
// 128 * 127 * 2 fits int16.
constexpr bool kQ8Bias = false;
inline I32 dot_q8(const I32& acc, const I8& u, const I8& x) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    const __m256i q_lo = _mm256_xor_si256(u.lo, flip), q_hi = _mm256_xor_si256(u.hi, flip);
    return dot_u8s8(acc, {_mm256_abs_epi8(q_lo), _mm256_abs_epi8(q_hi)},
                    {_mm256_sign_epi8(x.lo, q_lo), _mm256_sign_epi8(x.hi, q_hi)});
}

#include "cpu/kernels/quant_tiled_impl.inc"

}  // namespace

void matmul(const void* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end, float* out,
            int32_t ldo) {
    quant_matmul_any(xs, M, w, n_begin, n_end, out, ldo);
}

}  // namespace tf::cpu::kernels::quant_avx2
