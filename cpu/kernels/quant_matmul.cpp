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
// The avx2 paths pack with AVX2, the avx512 ones with AVX-512: the same bytes.
const QuantKernels kAvx2 = {Isa::avx2, false, &pack_rows_quant_avx2, &quant_avx2::matmul};
const QuantKernels kAvx2Vnni = {Isa::avx2, true, &pack_rows_quant_avx2, &quant_avx2_vnni::matmul};
const QuantKernels kAvx512 = {Isa::avx512, false, &pack_rows_quant_avx512, &quant_avx512::matmul};
const QuantKernels kAvx512Vnni = {Isa::avx512, true, &pack_rows_quant_avx512, &quant_avx512_vnni::matmul};

}  // namespace

size_t quant_activation_row_bytes(int32_t k) { return static_cast<size_t>(k / 32) * sizeof(QuantActivationBlock); }

void pack_rows_quant(const float* x, int32_t rows, int32_t k, int32_t ldx, void* packed) {
    pack_activation_blocks(x, rows, k, ldx, packed, [](const float* x32, QuantActivationBlock& block) {
        quantize_activation_block(x32, 32, block.q, block.d);
        int32_t sums[2] = {};  // per sub-block of 16
        for (int32_t e = 0; e < 32; ++e) sums[e / 16] += block.q[e];
        finish_activation_block(block, sums);
    });
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
