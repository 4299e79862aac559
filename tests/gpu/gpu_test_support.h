// What the CUDA backend's device tests share: the fixture that skips without
// a device (saying why), loading with test options, and the prompts of the
// batch-invariance tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "gpu/cuda_backend.h"
#include "gpu/device.h"
#include "model/checkpoint_writer.h"
#include "tests/model/test_support.h"

namespace tf::gpu::testing {

class GpuTest : public ::testing::Test {
public:
    void SetUp() override {
        std::string why;
        if (list_devices(&why).empty()) GTEST_SKIP() << "no CUDA device: " << why;
    }

    static std::unique_ptr<model::Backend> load(const std::string& dir, bool graphs = true, int32_t max_rows = 512,
                                                int64_t kv_tokens = 1 << 18) {
        CudaOptions options;
        options.use_graphs = graphs;
        options.max_rows = max_rows;
        options.max_kv_tokens = kv_tokens;
        CudaLoadInfo info;
        auto backend = load_cuda_backend(dir, options, &info);
        EXPECT_GT(info.kv_tokens, 0);
        return backend;
    }
};

// The CPU backend's fp32 path (within 1e-3 of transformers on tinycode):
// the reference the device is compared with.
inline std::unique_ptr<model::Backend> load_cpu_reference(const std::string& dir) {
    cpu::kernels::Isa isa = cpu::kernels::best_isa();
    if (isa == cpu::kernels::Isa::avx512_bf16) isa = cpu::kernels::Isa::avx512;
    return cpu::load_cpu_backend(dir, 0, isa, cpu::kernels::Activations::f32);
}

// A Qwen3 layout with head_dim 128 (as the 8B models) whose GEMMs all end
// in a partial 32-column tile: vocab 1000, q|k|v 1024 + 2 * 256 columns
// (whole), gate|up 2 * 344, down 256 over k = 344.
inline model::CheckpointSpec head_dim_128_spec() {
    model::CheckpointSpec spec = model::preset_spec("tiny-qwen3");
    spec.hidden_size = 256;
    spec.num_heads = 8;
    spec.num_kv_heads = 2;
    spec.head_dim = 128;
    spec.intermediate_size = 344;
    spec.vocab_size = 1000;
    spec.max_position_embeddings = 4096;
    return spec;
}

// Prompt lengths that cross block (16) and split (256) boundaries; 1,100
// positions span 5 splits (8 attention workers a row), 2,300 span 9 (16).
inline std::vector<std::vector<int32_t>> test_prompts(int32_t vocab, int32_t longest) {
    std::vector<int32_t> lengths = {1, 17, 64, 129, 300, 40, 1100, 2300};
    std::vector<std::vector<int32_t>> prompts;
    for (size_t i = 0; i < lengths.size(); ++i) {
        if (lengths[i] > longest) continue;
        prompts.push_back(model::testing::random_tokens(lengths[i], vocab, 7 + static_cast<uint32_t>(i)));
    }
    return prompts;
}

}  // namespace tf::gpu::testing
