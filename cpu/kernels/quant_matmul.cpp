// The int8 activation packing (one scalar version for every path) and the
// choice of quantized kernels.
#include "cpu/kernels/quant_matmul.h"

#include <cpuid.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tf::cpu::kernels {

namespace quant_scalar {
void matmul(const void* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end, float* out, int32_t ldo);
}
namespace quant_avx2 {
void matmul(const void* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end, float* out, int32_t ldo);
}
namespace quant_avx2_vnni {
void matmul(const void* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end, float* out, int32_t ldo);
}
namespace quant_avx512 {
void matmul(const void* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end, float* out, int32_t ldo);
}
namespace quant_avx512_vnni {
void matmul(const void* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end, float* out, int32_t ldo);
}

namespace {

// One block of 32: d = amax/127, q = x * (127/amax) rounded to nearest even;
// a NaN is left out of amax and becomes q = 0 (quant_pack_avx2.cpp agrees).
void quantize_activation_block(const float* x, int32_t valid, int8_t* q, float& d) {
    float amax = 0.0f;
    for (int32_t i = 0; i < valid; ++i) amax = std::max(amax, std::fabs(x[i]));
    d = amax / 127.0f;
    const float inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int32_t i = 0; i < 32; ++i) {
        const float rounded = std::nearbyint(i < valid ? x[i] * inverse : 0.0f);
        q[i] = std::isnan(rounded) ? 0 : static_cast<int8_t>(std::clamp(rounded, -127.0f, 127.0f));
    }
}

bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, int bit) {
    unsigned r[4] = {};
    if (!__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3])) return false;
    return (r[reg] >> bit) & 1;
}

const QuantKernels kScalar = {Isa::scalar, false, &pack_rows_quant, &quant_scalar::matmul};
// Every vector path packs with AVX2 (the AVX-512 paths too: 32 floats are
// four ymm, and the packing is a small part of a forward).
const QuantKernels kAvx2 = {Isa::avx2, false, &pack_rows_quant_avx2, &quant_avx2::matmul};
const QuantKernels kAvx2Vnni = {Isa::avx2, true, &pack_rows_quant_avx2, &quant_avx2_vnni::matmul};
const QuantKernels kAvx512 = {Isa::avx512, false, &pack_rows_quant_avx2, &quant_avx512::matmul};
const QuantKernels kAvx512Vnni = {Isa::avx512, true, &pack_rows_quant_avx2, &quant_avx512_vnni::matmul};

}  // namespace

size_t quant_activation_row_bytes(int32_t k) { return static_cast<size_t>(k / 32) * sizeof(QuantActivationBlock); }

void pack_rows_quant(const float* x, int32_t rows, int32_t k, int32_t ldx, void* packed) {
    assert(k % 32 == 0);
    auto* out = static_cast<QuantActivationBlock*>(packed);
    for (int32_t r = 0; r < rows; ++r) {
        const float* row = x + static_cast<size_t>(r) * ldx;
        for (int32_t b = 0; b < k / 32; ++b) {
            QuantActivationBlock& block = out[static_cast<size_t>(r) * (k / 32) + b];
            block = QuantActivationBlock{};
            quantize_activation_block(row + 32 * b, 32, block.q, block.d);
            for (int32_t h = 0; h < 2; ++h) {
                int32_t sum[2] = {};  // over the sub-blocks of 16 (groups 0-1, 2-3)
                for (int32_t g = 0; g < 4; ++g)
                    for (int32_t i = 0; i < 4; ++i) sum[g / 2] += block.q[8 * g + 4 * h + i];
                block.bias_q8[h] = -128 * (sum[0] + sum[1]);
                // |.| <= 32 * 8 * 127, an int16
                for (int32_t i = 0; i < 2; ++i) block.bias_q6[2 * i + h] = static_cast<int16_t>(-32 * sum[i]);
                block.min_x[h] = -(block.d * static_cast<float>(sum[0] + sum[1]));
            }
        }
    }
}

void unpack_row_quant(const void* packed_row, int32_t k, float* x) {
    const auto* blocks = static_cast<const QuantActivationBlock*>(packed_row);
    for (int32_t i = 0; i < k; ++i) x[i] = blocks[i / 32].d * static_cast<float>(blocks[i / 32].q[i % 32]);
}

bool quant_vnni_supported(Isa isa) {
    if (!isa_supported(isa)) return false;
    switch (isa) {
        case Isa::scalar: return false;
        case Isa::avx2: return cpuid_bit(7, 1, 0, 4);  // CPUID.(7,1):EAX[4] AVX-VNNI
        case Isa::avx512:
        case Isa::avx512_bf16: return cpuid_bit(7, 0, 2, 11);  // CPUID.(7,0):ECX[11] AVX512_VNNI
    }
    return false;
}

bool parse_vnni(const std::string& text, Isa isa) {
    if (text == "auto") return quant_vnni_supported(isa);
    if (text == "off") return false;
    if (text == "on") {
        if (!quant_vnni_supported(isa))
            throw std::invalid_argument(std::string("on: the int8 dot product (VNNI) is not available on the ") +
                                        isa_name(isa) + " path of this CPU");
        return true;
    }
    throw std::invalid_argument("\"" + text + "\": expected auto, on or off");
}

const QuantKernels& quant_kernels(Isa isa) { return quant_kernels(isa, quant_vnni_supported(isa)); }

const QuantKernels& quant_kernels(Isa isa, bool vnni) {
    if (vnni && !quant_vnni_supported(isa))
        throw std::invalid_argument(std::string("the int8 dot product (VNNI) is not available on the ") +
                                    isa_name(isa) + " path of this CPU");
    switch (isa) {
        case Isa::scalar: return kScalar;
        case Isa::avx2: return vnni ? kAvx2Vnni : kAvx2;
        case Isa::avx512:
        case Isa::avx512_bf16: return vnni ? kAvx512Vnni : kAvx512;
    }
    return kScalar;
}

}  // namespace tf::cpu::kernels
