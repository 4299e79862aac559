// Quantized weights and the int8 matmul: the GGUF block layouts (against
// blocks llama.cpp wrote and its own dequantization of them), the
// quantizers' error, the kernel's tiled layout, the activation packing,
// every path bit-identical to
// scalar, rows independent of their batch and of the column split, and the
// kernel close to a double-precision sum over what it multiplies.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels/quant_matmul.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/test_support.h"

namespace tf::cpu::kernels {
namespace {

using testing::random_floats;

constexpr model::QuantType kTypes[] = {model::QuantType::q8_0, model::QuantType::q4_0, model::QuantType::q4_k,
                                       model::QuantType::q6_k, model::QuantType::q5_k, model::QuantType::q5_0};

float bits_to_float(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}
uint32_t float_bits(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits;
}

// Every quantized path this CPU runs: each vector width, with and without
// VNNI where it has it (avx512-bf16 runs the avx512 kernels).
std::vector<const QuantKernels*> runnable_paths() {
    std::vector<const QuantKernels*> paths;
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
        if (!isa_supported(isa)) continue;
        paths.push_back(&quant_kernels(isa, false));
        if (quant_vnni_supported(isa)) paths.push_back(&quant_kernels(isa, true));
    }
    return paths;
}
std::string path_name(const QuantKernels& k) { return std::string(isa_name(k.isa)) + (k.vnni ? "-vnni" : ""); }

// rows x cols weights quantized to `type`, in the kernel's layout.
struct QuantMatrix {
    std::vector<uint8_t> gguf, kernel;
    std::vector<float> dequantized;  // row-major, what the blocks mean
    WeightMatrix w;
    QuantMatrix(model::QuantType type, int32_t rows, int32_t cols, uint32_t seed) {
        const auto values = random_floats(static_cast<size_t>(rows) * cols, seed, 0.5f);
        const size_t row_bytes = model::quant_row_bytes(type, cols);
        gguf.resize(row_bytes * rows);
        dequantized.resize(values.size());
        for (int32_t r = 0; r < rows; ++r) {
            model::quantize_row(type, &values[static_cast<size_t>(r) * cols], cols, &gguf[r * row_bytes]);
            model::dequantize_row(type, &gguf[r * row_bytes], cols, &dequantized[static_cast<size_t>(r) * cols]);
        }
        kernel.resize(quant_kernel_matrix_bytes(type, rows, cols));
        repack_quant(type, gguf.data(), rows, cols, kernel.data());
        w = {kernel.data(), weight_format(type), rows, cols, cols};
    }
};

std::vector<char> pack(const std::vector<float>& x, int32_t M, int32_t K) {
    std::vector<char> packed(quant_activation_row_bytes(K) * M);
    pack_rows_quant(x.data(), M, K, K, packed.data());
    return packed;
}

// The kernel called directly on columns [n_begin, n_end); other entries
// keep a marker NaN.
std::vector<float> run(const QuantKernels& k, const std::vector<char>& xs, int32_t M, const WeightMatrix& w,
                       int32_t n_begin, int32_t n_end) {
    std::vector<float> out(static_cast<size_t>(M) * w.rows, bits_to_float(0x7FC0DEADu));
    k.matmul(xs.data(), M, w, n_begin, n_end, out.data(), w.rows);
    return out;
}

TEST(QuantBlocks, HaveGgufSizesAndGeometry) {
    EXPECT_EQ(model::quant_block_bytes(model::QuantType::q8_0), 34u);
    EXPECT_EQ(model::quant_block_bytes(model::QuantType::q4_0), 18u);
    EXPECT_EQ(model::quant_block_bytes(model::QuantType::q4_k), 144u);
    EXPECT_EQ(model::quant_block_bytes(model::QuantType::q6_k), 210u);
    EXPECT_EQ(model::quant_block_bytes(model::QuantType::q5_k), 176u);
    EXPECT_EQ(model::quant_block_bytes(model::QuantType::q5_0), 22u);
    EXPECT_EQ(model::quant_block_elements(model::QuantType::q5_0), 32);
    EXPECT_EQ(model::quant_block_elements(model::QuantType::q8_0), 32);
    EXPECT_EQ(model::quant_block_elements(model::QuantType::q6_k), 256);
    EXPECT_EQ(model::quant_row_bytes(model::QuantType::q4_0, 96), 54u);
    EXPECT_EQ(model::quant_row_bytes(model::QuantType::q4_k, 512), 288u);
    // tiles of 16 rows: a head of scales padded to 64 bytes, then the quants
    EXPECT_EQ(quant_kernel_matrix_bytes(model::QuantType::q8_0, 32, 128), 2u * (128 + 4 * 512));
    EXPECT_EQ(quant_kernel_matrix_bytes(model::QuantType::q4_0, 17, 96), 2u * (128 + 3 * 256));
    EXPECT_EQ(quant_kernel_matrix_bytes(model::QuantType::q4_k, 16, 512), 640u + 2 * 2048);
    EXPECT_EQ(quant_kernel_matrix_bytes(model::QuantType::q6_k, 3, 256), 320u + 3072);
    EXPECT_EQ(quant_kernel_matrix_bytes(model::QuantType::q5_k, 16, 512), 640u + 2 * 2560);
    EXPECT_EQ(quant_kernel_matrix_bytes(model::QuantType::q5_0, 17, 96), 2u * (128 + 3 * 320));
    EXPECT_EQ(quant_activation_row_bytes(96), 3u * 64);
}

// quant_layout.h's tiled layout, spelled out for q8_0 and q4_0: lane r of
// group g's vector holds row r's elements 4g .. 4g + 3.
TEST(QuantBlocks, RepackInterleavesSixteenRowsPerTileAsTheHeaderSays) {
    const int32_t rows = 19, cols = 64;  // two tiles, the second with 13 padding rows
    for (model::QuantType type : {model::QuantType::q8_0, model::QuantType::q4_0}) {
        const QuantMatrix m(type, rows, cols, 5);
        const size_t head = quant_tile_head_bytes(type, cols), tile = quant_tile_bytes(type, cols);
        const size_t block_bytes = model::quant_block_bytes(type), row_bytes = model::quant_row_bytes(type, cols);
        for (int32_t row = 0; row < 32; ++row) {
            const uint8_t* t = m.kernel.data() + (row / 16) * tile;
            const int32_t r = row % 16;
            for (int32_t b = 0; b < cols / 32; ++b) {
                uint16_t d;
                std::memcpy(&d, t + 32 * b + 2 * r, 2);
                const uint8_t* gguf = m.gguf.data() + row * row_bytes + b * block_bytes;
                EXPECT_EQ(d, row < rows ? gguf[0] | (gguf[1] << 8) : 0) << row;
                for (int32_t e = 0; e < 32; ++e) {
                    int stored;
                    if (type == model::QuantType::q8_0) {
                        stored = t[head + 512 * b + 64 * (e / 4) + 4 * r + e % 4] - 128;
                    } else {
                        const uint8_t byte = t[head + 256 * b + 64 * (e % 16 / 4) + 4 * r + e % 4];
                        stored = (e < 16 ? byte & 0xF : byte >> 4) - 8;
                    }
                    const int want = row >= rows ? (type == model::QuantType::q8_0 ? 0 : -8)
                                     : type == model::QuantType::q8_0
                                         ? static_cast<int8_t>(gguf[2 + e])
                                         : (e < 16 ? gguf[2 + e] & 0xF : gguf[2 + e - 16] >> 4) - 8;
                    EXPECT_EQ(stored, want)
                        << model::quant_type_name(type) << " row " << row << " element " << 32 * b + e;
                }
            }
        }
    }
}

TEST(QuantBlocks, NamesParseAndPrint) {
    for (model::QuantType type : kTypes) EXPECT_EQ(model::parse_quant_type(model::quant_type_name(type)), type);
    EXPECT_EQ(model::parse_quant_type("Q4_K"), model::QuantType::q4_k);
    EXPECT_EQ(model::parse_quant_type("Q5_K"), model::QuantType::q5_k);
    EXPECT_THROW(model::parse_quant_type("q3_k"), std::invalid_argument);
    EXPECT_THROW(quant_kernels(Isa::scalar, true), std::invalid_argument);
}

TEST(QuantFp16, ConvertsEveryHalfExactlyAndRoundsFloatsToNearestEven) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = model::fp16_to_float(static_cast<uint16_t>(h));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(model::fp16_to_float(model::float_to_fp16(f))));
        } else {
            EXPECT_EQ(model::float_to_fp16(f), h) << h;
        }
    }
    EXPECT_EQ(model::fp16_to_float(0x3C00), 1.0f);
    EXPECT_EQ(model::fp16_to_float(0x0001), 0x1p-24f);
    EXPECT_EQ(model::float_to_fp16(1.0f + 0x1p-11f), 0x3C00);      // tie, even stays
    EXPECT_EQ(model::float_to_fp16(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie, odd rounds up
    EXPECT_EQ(model::float_to_fp16(0x1p-25f), 0x0000);             // tie to the even zero
    EXPECT_EQ(model::float_to_fp16(0x1.8p-24f), 0x0002);           // 1.5 ulp subnormal -> 2
    EXPECT_EQ(model::float_to_fp16(65520.0f), 0x7C00);             // rounds past the largest half
    EXPECT_EQ(model::float_to_fp16(65519.0f), 0x7BFF);
    EXPECT_EQ(model::float_to_fp16(-2.0f), 0xC000);
}

// Blocks from llama.cpp's GGUF files and gguf-py's dequantization of them
// (tests/fixtures/make_quant_fixture.py): our reading of the layouts.
TEST(QuantBlocks, DequantizeLlamaCppBlocksAsGgufPyDoes) {
    std::ifstream file(testing::fixture_path("quant_blocks.json"));
    ASSERT_TRUE(file) << testing::fixture_path("quant_blocks.json");
    const auto fixture = nlohmann::json::parse(file);
    ASSERT_EQ(fixture["cases"].size(), 4u);
    for (const auto& c : fixture["cases"]) {
        const model::QuantType type = model::parse_quant_type(c["type"].get<std::string>());
        const std::string hex = c["hex"];
        std::vector<uint8_t> raw(hex.size() / 2);
        for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
        const auto bits = c["bits"].get<std::vector<uint32_t>>();
        ASSERT_EQ(raw.size(), model::quant_row_bytes(type, static_cast<int64_t>(bits.size())));
        std::vector<float> ours(bits.size());
        model::dequantize_row(type, raw.data(), static_cast<int64_t>(bits.size()), ours.data());
        int differ = 0;
        for (size_t i = 0; i < bits.size(); ++i) {
            const float theirs = bits_to_float(bits[i]);
            EXPECT_LE(std::fabs(ours[i] - theirs), std::fabs(theirs) * 0x1p-23f) << c["source"] << " element " << i;
            differ += float_bits(ours[i]) != bits[i];
        }
        EXPECT_EQ(differ, 0) << c["source"] << ": elements off by an ulp";
    }
}

// ggml's q8_0 and q4_0 quantizers give back the very blocks llama.cpp wrote
// when fed what those blocks mean (their largest value hits the end of the
// range exactly, so the scale comes out the same).
TEST(QuantBlocks, ReferenceQuantizersReproduceLlamaCppBlocks) {
    std::ifstream file(testing::fixture_path("quant_blocks.json"));
    const auto fixture = nlohmann::json::parse(file);
    for (const auto& c : fixture["cases"]) {
        const model::QuantType type = model::parse_quant_type(c["type"].get<std::string>());
        if (type != model::QuantType::q8_0 && type != model::QuantType::q4_0) continue;
        const auto bits = c["bits"].get<std::vector<uint32_t>>();
        std::vector<float> values(bits.size());
        for (size_t i = 0; i < bits.size(); ++i) values[i] = bits_to_float(bits[i]);
        std::vector<uint8_t> ours(model::quant_row_bytes(type, static_cast<int64_t>(values.size())));
        model::quantize_row(type, values.data(), static_cast<int64_t>(values.size()), ours.data());
        std::string hex;
        for (uint8_t b : ours) {
            char two[3];
            std::snprintf(two, sizeof two, "%02x", b);
            hex += two;
        }
        EXPECT_EQ(hex, c["hex"].get<std::string>()) << c["source"];
    }
}

// Relative RMS error of quantize -> dequantize on uniform values, per type,
// and no element off by more than its block's step allows.
TEST(QuantBlocks, RoundTripErrorIsWithinEachFormatsStep) {
    const double bound[] = {0.006, 0.08, 0.07, 0.02, 0.035, 0.04};  // q8_0, q4_0, q4_k, q6_k, q5_k, q5_0
    for (model::QuantType type : kTypes) {
        const int64_t n = 256 * 16;
        const auto x = random_floats(n, 7, 1.0f);
        std::vector<uint8_t> blocks(model::quant_row_bytes(type, n));
        model::quantize_row(type, x.data(), n, blocks.data());
        std::vector<float> y(n);
        model::dequantize_row(type, blocks.data(), n, y.data());
        double error = 0, signal = 0, worst = 0;
        for (int64_t i = 0; i < n; ++i) {
            error += (x[i] - y[i]) * (x[i] - y[i]);
            signal += x[i] * x[i];
            worst = std::max(worst, std::fabs(static_cast<double>(x[i] - y[i])));
        }
        EXPECT_LT(std::sqrt(error / signal), bound[static_cast<int>(type)]) << model::quant_type_name(type);
        // the coarsest step of the format over a range of 2, plus fp16 scale rounding
        const double step[] = {2.0 / 254, 2.0 / 15, 2.0 / 15, 2.0 / 63, 2.0 / 31, 2.0 / 31};
        EXPECT_LT(worst, step[static_cast<int>(type)]) << model::quant_type_name(type);
    }
}

TEST(QuantActivations, AreBlocksOfAmaxOver127RoundedToNearestEvenWithTheirSums) {
    const int32_t K = 96;  // three blocks, the third all zero
    std::vector<float> x(K, 0.0f);
    for (int32_t i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16) / 16.0f;  // amax 1 (at -1)
    x[33] = -127.0f;  // amax of block 1: its scale is 1 and x * (127/amax) exact
    x[34] = 0.5f;     // ties go to even: 0
    x[35] = 1.5f;     // 2
    x[36] = 2.5f;     // 2
    const auto packed = pack(x, 1, K);
    ASSERT_EQ(packed.size(), 3 * sizeof(QuantActivationBlock));
    const auto* blocks = reinterpret_cast<const QuantActivationBlock*>(packed.data());
    EXPECT_EQ(blocks[0].d, 1.0f / 127.0f);
    EXPECT_EQ(blocks[0].q[0], -127);
    EXPECT_EQ(blocks[0].q[8], static_cast<int8_t>(std::nearbyint(-0.5f * 127.0f)));  // -63.5 -> -64
    EXPECT_EQ(blocks[1].d, 1.0f);
    EXPECT_EQ(blocks[1].q[1], -127);
    EXPECT_EQ(blocks[1].q[2], 0);
    EXPECT_EQ(blocks[1].q[3], 2);
    EXPECT_EQ(blocks[1].q[4], 2);
    // the zero-point biases (q6_k's per sub-block of 16) and q4_k's min term
    for (int b = 0; b < 3; ++b) {
        const QuantActivationBlock& block = blocks[b];
        int32_t sum[2] = {};
        for (int e = 0; e < 32; ++e) sum[e / 16] += block.q[e];
        EXPECT_EQ(block.bias_q8, -128 * (sum[0] + sum[1]));
        EXPECT_EQ(block.bias_q6[0], -32 * sum[0]);
        EXPECT_EQ(block.bias_q6[1], -32 * sum[1]);
        EXPECT_EQ(block.min_x, -(block.d * static_cast<float>(sum[0] + sum[1])));
    }
    for (int e = 0; e < 32; ++e) EXPECT_EQ(blocks[2].q[e], 0);
    EXPECT_EQ(blocks[2].d, 0.0f);
    EXPECT_EQ(float_bits(blocks[2].min_x), 0x80000000u);  // -(0 * 0)
}

// The AVX2 and AVX-512 packings (the vector paths') give the scalar
// packing's bytes: rows of very different scales, exact ties, subnormals,
// zero and all-zero blocks, a lone infinity and NaNs (left out of amax,
// quantized to 0).
void expect_the_scalar_packing(PackRowsFn pack) {
    const int32_t K = 32 * 64, M = 6;
    std::vector<float> x = random_floats(static_cast<size_t>(M) * K, 41, 3.0f);
    for (int32_t r = 0; r < M; ++r) {
        const float scale = std::ldexp(1.0f, 20 * r - 60);  // 2^-60 .. 2^40
        for (int32_t k = 0; k < K; ++k) x[static_cast<size_t>(r) * K + k] *= scale;
    }
    float* row0 = x.data();
    for (int32_t i = 0; i < 32; ++i) row0[i] = static_cast<float>(i - 16) / 16.0f;
    for (int32_t i = 32; i < 64; ++i) row0[i] = 0.5f + static_cast<float>(i % 4);  // ties: .5 steps at amax 3.5
    for (int32_t i = 64; i < 96; ++i) row0[i] = 0.0f;                              // an all-zero block
    for (int32_t i = 96; i < 128; ++i) row0[i] = std::ldexp(static_cast<float>(i - 100), -140);  // subnormals
    row0[130] = -0.0f;
    row0[160] = std::numeric_limits<float>::infinity();
    row0[192] = std::numeric_limits<float>::quiet_NaN();
    row0[224] = -std::numeric_limits<float>::quiet_NaN();
    for (int32_t i = 256; i < 288; ++i) row0[i] = std::numeric_limits<float>::quiet_NaN();  // nothing but NaN
    std::vector<char> scalar(quant_activation_row_bytes(K) * M), vector(scalar.size(), 'x');
    pack_rows_quant(x.data(), M, K, K, scalar.data());
    pack(x.data(), M, K, K, vector.data());
    for (size_t b = 0; b < scalar.size() / sizeof(QuantActivationBlock); ++b) {
        ASSERT_EQ(std::memcmp(scalar.data() + 64 * b, vector.data() + 64 * b, 64), 0) << "block " << b;
    }
    const auto* blocks = reinterpret_cast<const QuantActivationBlock*>(scalar.data());
    EXPECT_EQ(blocks[5].d, std::numeric_limits<float>::infinity());
    EXPECT_EQ(blocks[6].q[0], 0);  // the NaN
    EXPECT_EQ(blocks[8].d, 0.0f);  // all NaN: amax 0
}

TEST(QuantActivations, TheAvx2PackingIsTheScalarPackingByteForByte) {
    if (!isa_supported(Isa::avx2)) GTEST_SKIP() << "this CPU has no AVX2";
    expect_the_scalar_packing(&pack_rows_quant_avx2);
}

TEST(QuantActivations, TheAvx512PackingIsTheScalarPackingByteForByte) {
    if (!isa_supported(Isa::avx512)) GTEST_SKIP() << "this CPU has no AVX-512";
    expect_the_scalar_packing(&pack_rows_quant_avx512);
}

// TF_VNNI: auto follows the CPU, off always works (the VPMADDUBSW path,
// the same bits), on only where the CPU has the instruction.
TEST(QuantKernels, VnniIsAutoOnOrOff) {
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512_bf16}) {
        if (!isa_supported(isa)) continue;
        EXPECT_EQ(parse_vnni("auto", isa), quant_vnni_supported(isa)) << isa_name(isa);
        EXPECT_FALSE(parse_vnni("off", isa)) << isa_name(isa);
        if (quant_vnni_supported(isa)) {
            EXPECT_TRUE(parse_vnni("on", isa));
        } else {
            EXPECT_THROW(parse_vnni("on", isa), std::invalid_argument) << isa_name(isa);
        }
        try {
            (void)parse_vnni("yes", isa);
            ADD_FAILURE() << "\"yes\" was taken";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("auto, on or off"), std::string::npos) << e.what();
        }
    }
}

struct Shape {
    model::QuantType type;
    int32_t K;
};
// q8_0 and q4_0 with an odd number of blocks (a half-empty last pair) and
// several super-blocks for the k-quants.
const Shape kShapes[] = {
    {model::QuantType::q8_0, 32},  {model::QuantType::q8_0, 160}, {model::QuantType::q8_0, 512},
    {model::QuantType::q4_0, 96},  {model::QuantType::q4_0, 288}, {model::QuantType::q4_0, 256},
    {model::QuantType::q4_k, 256}, {model::QuantType::q4_k, 768}, {model::QuantType::q6_k, 256},
    {model::QuantType::q6_k, 768}, {model::QuantType::q5_k, 256}, {model::QuantType::q5_k, 768},
    {model::QuantType::q5_0, 96},  {model::QuantType::q5_0, 288},
};

TEST(QuantMatmul, EveryPathIsBitIdenticalToScalar) {
    const auto paths = runnable_paths();
    const int32_t N = 37;
    for (const Shape& shape : kShapes) {
        const QuantMatrix m(shape.type, N, shape.K, 11);
        for (int32_t M : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17, 26}) {
            const auto xs = pack(random_floats(static_cast<size_t>(M) * shape.K, 12 + M), M, shape.K);
            // the launcher's ranges start on a tile of 16; the last tile is partial (N = 37)
            for (auto [n_begin, n_end] : {std::pair{0, N}, std::pair{16, 30}, std::pair{32, N}, std::pair{0, 16}}) {
                const auto reference = run(quant_kernels(Isa::scalar, false), xs, M, m.w, n_begin, n_end);
                for (const QuantKernels* path : paths)
                    EXPECT_TRUE(testing::bitwise_equal(run(*path, xs, M, m.w, n_begin, n_end), reference))
                        << path_name(*path) << " " << model::quant_type_name(shape.type) << " K=" << shape.K
                        << " M=" << M << " n=[" << n_begin << "," << n_end << ")";
            }
        }
    }
}

TEST(QuantMatmul, ARowGetsTheSameBitsAloneInABatchAndUnderAnyColumnSplit) {
    const int32_t M = 19, N = 45;
    for (const Shape& shape : {Shape{model::QuantType::q8_0, 160}, Shape{model::QuantType::q4_0, 96},
                               Shape{model::QuantType::q4_k, 512}, Shape{model::QuantType::q6_k, 256},
                               Shape{model::QuantType::q5_k, 512}, Shape{model::QuantType::q5_0, 96}}) {
        const QuantMatrix m(shape.type, N, shape.K, 21);
        const auto x = random_floats(static_cast<size_t>(M) * shape.K, 22);
        const auto xs = pack(x, M, shape.K);
        for (const QuantKernels* path : runnable_paths()) {
            const auto batched = run(*path, xs, M, m.w, 0, N);
            // the same columns in pieces, and through the threaded launcher
            std::vector<float> pieces(batched.size());
            for (auto [b, e] : {std::pair{0, 16}, std::pair{16, 32}, std::pair{32, N}})
                path->matmul(xs.data(), M, m.w, b, e, pieces.data(), N);
            EXPECT_TRUE(testing::bitwise_equal(pieces, batched)) << path_name(*path);
            ThreadPool pool(3);
            std::vector<float> threaded(batched.size());
            quant_matmul(*path, pool, xs.data(), M, {MatmulJob{&m.w, threaded.data(), N}});
            EXPECT_TRUE(testing::bitwise_equal(threaded, batched)) << path_name(*path);
            for (int32_t row = 0; row < M; ++row) {
                const std::vector<float> one(x.begin() + row * shape.K, x.begin() + (row + 1) * shape.K);
                EXPECT_TRUE(testing::bitwise_equal(
                    run(*path, pack(one, 1, shape.K), 1, m.w, 0, N),
                    std::vector<float>(batched.begin() + row * N, batched.begin() + (row + 1) * N)))
                    << path_name(*path) << " " << model::quant_type_name(shape.type) << " row " << row;
            }
        }
    }
}

// quant_matmul.h's order written out in plain C++ from the GGUF blocks and
// the packed activations, one fmaf chain per output: the scalar path (and
// so every path) gives exactly these bits.
float ordered_dot(model::QuantType type, const uint8_t* gguf_row, const QuantActivationBlock* x, int32_t K) {
    float p = 0.0f;
    for (int32_t b = 0; b < K / 32; ++b) {
        const QuantActivationBlock& a = x[b];
        switch (type) {
            case model::QuantType::q8_0: {
                model::BlockQ8_0 w;
                std::memcpy(&w, gguf_row + sizeof w * b, sizeof w);
                int32_t i = 0;
                for (int e = 0; e < 32; ++e) i += w.qs[e] * a.q[e];
                p = std::fmaf(model::fp16_to_float(w.d) * a.d, static_cast<float>(i), p);
                break;
            }
            case model::QuantType::q4_0: {
                model::BlockQ4_0 w;
                std::memcpy(&w, gguf_row + sizeof w * b, sizeof w);
                int32_t i = 0;
                for (int e = 0; e < 32; ++e) i += ((e < 16 ? w.qs[e] & 0xF : w.qs[e - 16] >> 4) - 8) * a.q[e];
                p = std::fmaf(model::fp16_to_float(w.d) * a.d, static_cast<float>(i), p);
                break;
            }
            case model::QuantType::q4_k: {
                model::BlockQ4_K w;
                std::memcpy(&w, gguf_row + sizeof w * (b / 8), sizeof w);
                const int32_t j = b % 8;
                uint8_t sc, mn;
                model::q4k_scale_min(j, w.scales, sc, mn);
                int32_t i = 0;
                for (int e = 0; e < 32; ++e) {
                    const uint8_t byte = w.qs[32 * (j / 2) + e];
                    i += (j % 2 == 0 ? byte & 0xF : byte >> 4) * a.q[e];
                }
                p = std::fmaf(model::fp16_to_float(w.d) * sc * a.d, static_cast<float>(i), p);
                p = std::fmaf(model::fp16_to_float(w.dmin) * mn, a.min_x, p);
                break;
            }
            case model::QuantType::q5_0: {
                model::BlockQ5_0 w;
                std::memcpy(&w, gguf_row + sizeof w * b, sizeof w);
                int32_t i = 0;
                for (int e = 0; e < 32; ++e) i += (model::q5_0_quant(w, e) - 16) * a.q[e];
                p = std::fmaf(model::fp16_to_float(w.d) * a.d, static_cast<float>(i), p);
                break;
            }
            case model::QuantType::q5_k: {
                model::BlockQ5_K w;
                std::memcpy(&w, gguf_row + sizeof w * (b / 8), sizeof w);
                const int32_t j = b % 8;
                uint8_t sc, mn;
                model::q4k_scale_min(j, w.scales, sc, mn);
                int32_t i = 0;
                for (int e = 0; e < 32; ++e) i += model::q5k_quant(w, 32 * j + e) * a.q[e];
                p = std::fmaf(model::fp16_to_float(w.d) * sc * a.d, static_cast<float>(i), p);
                p = std::fmaf(model::fp16_to_float(w.dmin) * mn, a.min_x, p);
                break;
            }
            case model::QuantType::q6_k: {
                model::BlockQ6_K w;
                std::memcpy(&w, gguf_row + sizeof w * (b / 8), sizeof w);
                for (int half = 0; half < 2; ++half) {
                    const int32_t sub = 2 * (b % 8) + half;  // sub-block of 16 in the super-block
                    int32_t i = 0;
                    for (int e = 0; e < 16; ++e) i += (model::q6k_quant(w, 16 * sub + e) - 32) * a.q[16 * half + e];
                    p = std::fmaf(model::fp16_to_float(w.d) * w.scales[sub] * a.d, static_cast<float>(i), p);
                }
                break;
            }
        }
    }
    return p;
}

TEST(QuantMatmul, EveryOutputIsTheDocumentedChainOfMultiplyAdds) {
    const int32_t M = 3, N = 21;
    for (const Shape& shape : {Shape{model::QuantType::q8_0, 160}, Shape{model::QuantType::q4_0, 96},
                               Shape{model::QuantType::q4_k, 512}, Shape{model::QuantType::q6_k, 512},
                               Shape{model::QuantType::q5_k, 512}, Shape{model::QuantType::q5_0, 160}}) {
        const QuantMatrix m(shape.type, N, shape.K, 51);
        const auto xs = pack(random_floats(static_cast<size_t>(M) * shape.K, 52), M, shape.K);
        const auto ours = run(quant_kernels(Isa::scalar, false), xs, M, m.w, 0, N);
        const size_t row_bytes = model::quant_row_bytes(shape.type, shape.K);
        for (int32_t r = 0; r < M; ++r) {
            const auto* x = reinterpret_cast<const QuantActivationBlock*>(xs.data()) + r * (shape.K / 32);
            for (int32_t n = 0; n < N; ++n)
                EXPECT_EQ(float_bits(ours[r * N + n]), float_bits(ordered_dot(shape.type, &m.gguf[n * row_bytes], x, shape.K)))
                    << model::quant_type_name(shape.type) << " row " << r << " column " << n;
        }
    }
}

// Against sums in double of exactly what the kernel multiplies (the
// dequantized weights and the dequantized int8 activations): only the fp32
// rounding of the scales and the accumulation remain.
TEST(QuantMatmul, IsCloseToTheDoubleReferenceOfItsInputs) {
    const int32_t N = 29;  // the last tile of 16 rows partly padding
    for (int32_t M : {1, 6})  // the one-row (decode) kernel and a row pass
        for (const Shape& shape : {Shape{model::QuantType::q8_0, 1056}, Shape{model::QuantType::q4_0, 1056},
                                   Shape{model::QuantType::q4_k, 1024}, Shape{model::QuantType::q6_k, 1024},
                                   Shape{model::QuantType::q5_k, 1024}, Shape{model::QuantType::q5_0, 1056}}) {
            const int32_t K = shape.K;
            const QuantMatrix m(shape.type, N, K, 31);
            const auto xs = pack(random_floats(static_cast<size_t>(M) * K, 32), M, K);
            const QuantKernels& fastest = *runnable_paths().back();
            const auto ours = run(fastest, xs, M, m.w, 0, N);
            for (int32_t r = 0; r < M; ++r) {
                std::vector<float> x(K);
                unpack_row_quant(xs.data() + r * quant_activation_row_bytes(K), K, x.data());
                for (int32_t n = 0; n < N; ++n) {
                    double sum = 0, magnitude = 0;
                    for (int32_t k = 0; k < K; ++k) {
                        const double product =
                            static_cast<double>(x[k]) * m.dequantized[static_cast<size_t>(n) * K + k];
                        sum += product;
                        magnitude += std::fabs(product);
                    }
                    EXPECT_NEAR(ours[r * N + n], sum, 1e-6 * magnitude + 1e-7)
                        << model::quant_type_name(shape.type) << " M=" << M << " row " << r << " column " << n;
                }
            }
        }
}

}  // namespace
}  // namespace tf::cpu::kernels
