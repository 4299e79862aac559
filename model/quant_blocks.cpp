#include "model/quant_blocks.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <stdexcept>

namespace tf::model {

namespace {

// One sub-block of q4_k (top 15) or q5_k (top 31): x ~ scale*q + offset,
// q in 0..top, offset <= 0 (the format stores -offset as a non-negative
// min). A few rounds of "assign q, then refit scale and offset by least
// squares", starting from the range; keeps the best squared error seen.
void fit_affine(const float* x, int n, int top, float& scale, float& offset) {
    float lo = x[0], hi = x[0];
    for (int i = 1; i < n; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
    }
    lo = std::min(lo, 0.0f);
    if (hi <= lo) {
        scale = 0.0f;
        offset = lo;
        return;
    }
    float best_error = INFINITY, best_scale = 0.0f, best_offset = lo;
    float s = (hi - lo) / static_cast<float>(top), o = lo;
    for (int round = 0; round < 6 && s > 0.0f; ++round) {
        double sq = 0, sqq = 0, sx = 0, sqx = 0, error = 0;
        for (int i = 0; i < n; ++i) {
            const int q = std::clamp(static_cast<int>(std::lround((x[i] - o) / s)), 0, top);
            const double r = x[i] - (s * q + o);
            error += r * r;
            sq += q;
            sqq += static_cast<double>(q) * q;
            sx += x[i];
            sqx += q * static_cast<double>(x[i]);
        }
        if (error < best_error) {
            best_error = static_cast<float>(error);
            best_scale = s;
            best_offset = o;
        }
        const double det = n * sqq - sq * sq;
        if (det <= 0) break;
        const double ns = (n * sqx - sq * sx) / det;
        double no = (sx - ns * sq) / n;
        if (no > 0) no = 0;
        if (ns <= 0) break;
        s = static_cast<float>(ns);
        o = static_cast<float>(no);
    }
    scale = best_scale;
    offset = best_offset;
}

void pack_q4k_scales(const uint8_t* sc, const uint8_t* m, uint8_t* scales) {
    for (int j = 0; j < 4; ++j) {
        scales[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        scales[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
    }
}

// q4_k and q5_k blocks: x = d*sc*q - dmin*m per sub-block of 32, q from
// the block's own accessor (q4k_quant, q5k_quant).
template <class Block, class Quant>
void dequantize_affine_k(const Block& b, Quant quant, float* out) {
    const float d = fp16_to_float(b.d), dmin = fp16_to_float(b.dmin);
    for (int s = 0; s < 8; ++s) {
        uint8_t sc, m;
        q4k_scale_min(s, b.scales, sc, m);
        const float step = d * sc, shift = dmin * m;  // both exact
        for (int l = 0; l < 32; ++l) out[32 * s + l] = step * static_cast<float>(quant(b, 32 * s + l)) - shift;
    }
}

// The value of largest magnitude among x[0..n), with its sign (the first
// of equal magnitudes; 0 for all zeros).
float largest_magnitude(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j)
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    return max;
}

void quantize_q8_0(const float* x, BlockQ8_0& b) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = float_to_fp16(d);
    for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
}

void quantize_q4_0(const float* x, BlockQ4_0& b) {
    const float d = largest_magnitude(x, 32) / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = float_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
        const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
        const int hi = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
        b.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
}

// The scales and mins of q4_k and q5_k (top 15 or 31): each sub-block's
// fit, d and dmin mapping the largest to 63, and the 6-bit sc[] and m[].
void fit_k_scales(const float* x, int top, uint16_t& d_bits, uint16_t& dmin_bits, uint8_t* sc, uint8_t* m) {
    float scale[8], min[8], max_scale = 0.0f, max_min = 0.0f;
    for (int s = 0; s < 8; ++s) {
        float offset;
        fit_affine(x + 32 * s, 32, top, scale[s], offset);
        min[s] = -offset;
        max_scale = std::max(max_scale, scale[s]);
        max_min = std::max(max_min, min[s]);
    }
    d_bits = float_to_fp16(max_scale / 63.0f);
    dmin_bits = float_to_fp16(max_min / 63.0f);
    const float d = fp16_to_float(d_bits), dmin = fp16_to_float(dmin_bits);
    for (int s = 0; s < 8; ++s) {
        sc[s] = d > 0.0f ? static_cast<uint8_t>(std::clamp(std::lround(scale[s] / d), 0L, 63L)) : 0;
        m[s] = dmin > 0.0f ? static_cast<uint8_t>(std::clamp(std::lround(min[s] / dmin), 0L, 63L)) : 0;
    }
}

void quantize_q5_k(const float* x, BlockQ5_K& b) {
    uint8_t sc[8], m[8];
    fit_k_scales(x, 31, b.d, b.dmin, sc, m);
    pack_q4k_scales(sc, m, b.scales);
    const float d = fp16_to_float(b.d), dmin = fp16_to_float(b.dmin);
    std::memset(b.qs, 0, sizeof b.qs);
    std::memset(b.qh, 0, sizeof b.qh);
    for (int s = 0; s < 8; ++s) {
        const float step = d * sc[s], shift = dmin * m[s];
        for (int l = 0; l < 32; ++l) {
            const int q = step > 0.0f ? std::clamp(static_cast<int>(std::lround((x[32 * s + l] + shift) / step)), 0, 31) : 0;
            b.qs[32 * (s / 2) + l] |= static_cast<uint8_t>(s % 2 == 0 ? (q & 0xF) : (q & 0xF) << 4);
            b.qh[l] |= static_cast<uint8_t>((q >> 4) << s);
        }
    }
}

// ggml's reference: the value of largest magnitude maps to -16.
void quantize_q5_0(const float* x, BlockQ5_0& b) {
    const float d = largest_magnitude(x, 32) / -16.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = float_to_fp16(d);
    std::memset(b.qh, 0, sizeof b.qh);
    for (int j = 0; j < 16; ++j) {
        const int lo = std::min(31, static_cast<int>(x[j] * id + 16.5f));
        const int hi = std::min(31, static_cast<int>(x[j + 16] * id + 16.5f));
        b.qs[j] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        b.qh[j / 8] |= static_cast<uint8_t>((lo >> 4) << (j % 8));
        b.qh[2 + j / 8] |= static_cast<uint8_t>((hi >> 4) << (j % 8));
    }
}

void quantize_q4_k(const float* x, BlockQ4_K& b) {
    uint8_t sc[8], m[8];
    fit_k_scales(x, 15, b.d, b.dmin, sc, m);
    pack_q4k_scales(sc, m, b.scales);
    const float d = fp16_to_float(b.d), dmin = fp16_to_float(b.dmin);
    std::memset(b.qs, 0, sizeof b.qs);
    for (int s = 0; s < 8; ++s) {
        const float step = d * sc[s], shift = dmin * m[s];
        for (int l = 0; l < 32; ++l) {
            const int q = step > 0.0f ? std::clamp(static_cast<int>(std::lround((x[32 * s + l] + shift) / step)), 0, 15) : 0;
            b.qs[32 * (s / 2) + l] |= static_cast<uint8_t>(s % 2 == 0 ? q : q << 4);
        }
    }
}

void quantize_q6_k(const float* x, BlockQ6_K& b) {
    // Each sub-block of 16: the scale that maps its largest-magnitude value
    // to -32 (the full side of -32..31), refined by trying nearby ones.
    float scale[16], max_abs_scale = 0.0f;
    for (int s = 0; s < 16; ++s) {
        const float* v = x + 16 * s;
        const float max = largest_magnitude(v, 16);
        float best = 0.0f, best_error = INFINITY;
        for (int step = -4; step <= 4 && max != 0.0f; ++step) {
            const float candidate = max / (-32.0f + 0.25f * step);
            double error = 0;
            for (int l = 0; l < 16; ++l) {
                const int q = std::clamp(static_cast<int>(std::lround(v[l] / candidate)), -32, 31);
                const double r = v[l] - candidate * q;
                error += r * r;
            }
            if (error < best_error) {
                best_error = static_cast<float>(error);
                best = candidate;
            }
        }
        scale[s] = best;
        max_abs_scale = std::max(max_abs_scale, std::fabs(best));
    }
    b.d = float_to_fp16(max_abs_scale / 127.0f);
    const float d = fp16_to_float(b.d);
    std::memset(b.ql, 0, sizeof b.ql);
    std::memset(b.qh, 0, sizeof b.qh);
    for (int s = 0; s < 16; ++s) {
        b.scales[s] = d > 0.0f ? static_cast<int8_t>(std::clamp(std::lround(scale[s] / d), -127L, 127L)) : 0;
        const float step = d * b.scales[s];
        for (int l = 0; l < 16; ++l) {
            const int e = 16 * s + l;
            const int q = (step != 0.0f ? std::clamp(static_cast<int>(std::lround(x[e] / step)), -32, 31) : 0) + 32;
            const int half = e / 128, g = (e % 128) / 32, i = e % 32;
            b.ql[64 * half + i + 32 * (g % 2)] |= static_cast<uint8_t>(g < 2 ? (q & 0xF) : (q & 0xF) << 4);
            b.qh[32 * half + i] |= static_cast<uint8_t>((q >> 4) << (2 * g));
        }
    }
}

}  // namespace

const char* quant_type_name(QuantType type) {
    switch (type) {
        case QuantType::q8_0: return "q8_0";
        case QuantType::q4_0: return "q4_0";
        case QuantType::q4_k: return "q4_k";
        case QuantType::q6_k: return "q6_k";
        case QuantType::q5_k: return "q5_k";
        case QuantType::q5_0: return "q5_0";
    }
    return "?";
}

QuantType parse_quant_type(const std::string& text) {
    std::string lower = text;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (QuantType type :
         {QuantType::q8_0, QuantType::q4_0, QuantType::q4_k, QuantType::q6_k, QuantType::q5_k, QuantType::q5_0})
        if (lower == quant_type_name(type)) return type;
    throw std::invalid_argument("quantization \"" + text + "\" is not one of q8_0, q4_0, q5_0, q4_k, q5_k, q6_k");
}

int64_t quant_block_elements(QuantType type) {
    return type == QuantType::q8_0 || type == QuantType::q4_0 || type == QuantType::q5_0 ? 32 : 256;
}

size_t quant_block_bytes(QuantType type) {
    switch (type) {
        case QuantType::q8_0: return sizeof(BlockQ8_0);
        case QuantType::q4_0: return sizeof(BlockQ4_0);
        case QuantType::q4_k: return sizeof(BlockQ4_K);
        case QuantType::q6_k: return sizeof(BlockQ6_K);
        case QuantType::q5_k: return sizeof(BlockQ5_K);
        case QuantType::q5_0: return sizeof(BlockQ5_0);
    }
    return 0;
}

size_t quant_row_bytes(QuantType type, int64_t cols) {
    assert(cols % quant_block_elements(type) == 0);
    return static_cast<size_t>(cols / quant_block_elements(type)) * quant_block_bytes(type);
}

void quantize_row(QuantType type, const float* x, int64_t n, void* out) {
    const int64_t block = quant_block_elements(type);
    if (n % block != 0)
        throw std::invalid_argument(std::string(quant_type_name(type)) + " rows need a multiple of " +
                                    std::to_string(block) + " values, not " + std::to_string(n));
    for (int64_t i = 0; i < n / block; ++i) {
        const float* v = x + i * block;
        switch (type) {
            case QuantType::q8_0: quantize_q8_0(v, static_cast<BlockQ8_0*>(out)[i]); break;
            case QuantType::q4_0: quantize_q4_0(v, static_cast<BlockQ4_0*>(out)[i]); break;
            case QuantType::q4_k: quantize_q4_k(v, static_cast<BlockQ4_K*>(out)[i]); break;
            case QuantType::q6_k: quantize_q6_k(v, static_cast<BlockQ6_K*>(out)[i]); break;
            case QuantType::q5_k: quantize_q5_k(v, static_cast<BlockQ5_K*>(out)[i]); break;
            case QuantType::q5_0: quantize_q5_0(v, static_cast<BlockQ5_0*>(out)[i]); break;
        }
    }
}

void dequantize_row(QuantType type, const void* blocks, int64_t n, float* out) {
    const int64_t count = n / quant_block_elements(type);
    for (int64_t i = 0; i < count; ++i) {
        switch (type) {
            case QuantType::q8_0: {
                const BlockQ8_0& b = static_cast<const BlockQ8_0*>(blocks)[i];
                const float d = fp16_to_float(b.d);
                for (int j = 0; j < 32; ++j) out[32 * i + j] = d * static_cast<float>(b.qs[j]);
                break;
            }
            case QuantType::q4_0: {
                const BlockQ4_0& b = static_cast<const BlockQ4_0*>(blocks)[i];
                const float d = fp16_to_float(b.d);
                for (int j = 0; j < 16; ++j) {
                    out[32 * i + j] = d * static_cast<float>((b.qs[j] & 0xF) - 8);
                    out[32 * i + j + 16] = d * static_cast<float>((b.qs[j] >> 4) - 8);
                }
                break;
            }
            case QuantType::q4_k:
                dequantize_affine_k(static_cast<const BlockQ4_K*>(blocks)[i], q4k_quant, out + 256 * i);
                break;
            case QuantType::q5_0: {
                const BlockQ5_0& b = static_cast<const BlockQ5_0*>(blocks)[i];
                const float d = fp16_to_float(b.d);
                for (int j = 0; j < 32; ++j) out[32 * i + j] = d * static_cast<float>(q5_0_quant(b, j) - 16);
                break;
            }
            case QuantType::q5_k:
                dequantize_affine_k(static_cast<const BlockQ5_K*>(blocks)[i], q5k_quant, out + 256 * i);
                break;
            case QuantType::q6_k: {
                const BlockQ6_K& b = static_cast<const BlockQ6_K*>(blocks)[i];
                const float d = fp16_to_float(b.d);
                for (int e = 0; e < 256; ++e) {
                    const float step = d * static_cast<float>(b.scales[e / 16]);  // exact
                    out[256 * i + e] = step * static_cast<float>(q6k_quant(b, e) - 32);
                }
                break;
            }
        }
    }
}

}  // namespace tf::model
