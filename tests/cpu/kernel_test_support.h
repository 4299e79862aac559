// Helpers shared by the kernel tests (kernels_test, matmul_test,
// attention_test): which SIMD paths this CPU runs, seeded random data, and
// weight matrices in either storage format.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cpu/kernels/isa.h"
#include "cpu/kernels/packing.h"
#include "model/checkpoint_writer.h"
#include "tests/model/test_support.h"

namespace tf::cpu::testing {

// The model tests' helpers (tests/model/test_support.h) answer as these do.
using namespace model::testing;

using kernels::Activations;
using kernels::Isa;
using kernels::WeightFormat;
using kernels::WeightMatrix;

// The float whose IEEE bits these are.
inline float float_from_bits(uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
}

// Every path this CPU runs.
inline std::vector<Isa> runnable_isas() {
    std::vector<Isa> isas;
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512_bf16})
        if (kernels::isa_supported(isa)) isas.push_back(isa);
    return isas;
}

// The paths this CPU runs that compute with `activations`.
inline std::vector<Isa> runnable_isas(Activations activations) {
    std::vector<Isa> isas;
    for (Isa isa : runnable_isas())
        if (activations == Activations::bf16 || isa != Isa::avx512_bf16) isas.push_back(isa);
    return isas;
}

// The fastest path this CPU runs that computes with `activations`. Not
// kernels::best_isa(): where the CPU advertises AVX512_BF16 (AMD Zen 4 and
// later) that is the bf16-only path, and a test of f32 arithmetic needs an
// f32 path whatever the machine.
inline Isa fastest_isa(Activations activations) { return runnable_isas(activations).back(); }

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
}

// rows x cols weights from `values` (row-major), stored bf16 or fp32
// pair-split as the loader would.
struct TestWeights {
    std::vector<uint16_t> bf16;
    std::vector<float> split;
    WeightMatrix w;
    TestWeights(int32_t rows, int32_t cols, WeightFormat format, const std::vector<float>& values) {
        const int32_t stride = kernels::padded_k(cols);
        w = {nullptr, format, rows, cols, stride};
        if (format == WeightFormat::bf16 || format == WeightFormat::bf16_tiled) {
            bf16.assign(static_cast<size_t>(rows) * stride, 0);
            for (int32_t r = 0; r < rows; ++r)
                for (int32_t c = 0; c < cols; ++c) bf16[r * stride + c] = model::float_to_bf16(values[r * cols + c]);
            if (format == WeightFormat::bf16_tiled) {
                // Garbage in the padding rows, which the kernel must never read.
                std::vector<uint16_t> tiled(static_cast<size_t>(kernels::tiled_rows(rows)) * stride, 0x7FC1);
                kernels::tile_bf16_rows(bf16.data(), cols, static_cast<size_t>(stride), stride, 0, rows, tiled.data());
                bf16 = std::move(tiled);
            }
            w.data = bf16.data();
        } else {
            split.assign(static_cast<size_t>(rows) * stride, 0.0f);
            for (int32_t r = 0; r < rows; ++r) kernels::split_pairs(&values[r * cols], cols, &split[r * stride]);
            w.data = split.data();
        }
    }
    // Seeded values in [-0.5, 0.5].
    TestWeights(int32_t rows, int32_t cols, WeightFormat format, uint32_t seed)
        : TestWeights(rows, cols, format, random_floats(static_cast<size_t>(rows) * cols, seed, 0.5f)) {}
};

}  // namespace tf::cpu::testing
