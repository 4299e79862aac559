// Correctness against Hugging Face transformers: greedy decoding of the
// embedded tinycode model reproduces the fp32 oracle's greedy ids exactly
// with either activation precision, and the top-5 logits at the end of the
// prompt are within 1e-3 (f32 activations) or 1e-2 (bf16 activations,
// measured at 2.4e-3: rounding each matmul input to 8 significant bits
// moves logits of size ~15 by a few hundredths).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "cpu/cpu_backend.h"
#include "engine/sampler.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/oracle_cases.h"
#include "tests/model/test_support.h"

namespace tf::cpu {
namespace {

using testing::fixture_path;
using testing::tinycode_dir;

using testing::GreedyCase;
using testing::oracle_cases;

// The fastest path of each precision this CPU runs.
kernels::Isa path_for(kernels::Activations activations) {
    const kernels::Isa best = kernels::best_isa();
    if (activations == kernels::Activations::bf16 && kernels::isa_supported(kernels::Isa::avx512_bf16)) {
        return kernels::Isa::avx512_bf16;
    }
    return best == kernels::Isa::avx512_bf16 ? kernels::Isa::avx512 : best;
}

class HfOracle : public ::testing::TestWithParam<kernels::Activations> {};

TEST_P(HfOracle, GreedyDecodingOfTinycodeMatchesTransformersExactly) {
    const kernels::Activations activations = GetParam();
    auto backend = load_cpu_backend(tinycode_dir(), 0, path_for(activations), activations);
    const float tolerance = activations == kernels::Activations::f32 ? 1e-3f : 1e-2f;
    float worst = 0;
    const auto cases = oracle_cases();
    ASSERT_GE(cases.size(), 6u);
    const int32_t vocab = backend->config().vocab_size;
    for (size_t c = 0; c < cases.size(); ++c) {
        const GreedyCase& g = cases[c];
        const auto stream = static_cast<model::StreamId>(c);
        backend->open_stream(stream, static_cast<int32_t>(g.prompt.size() + g.greedy.size()) + 1);
        std::vector<model::Row> rows;
        for (size_t i = 0; i < g.prompt.size(); ++i) {
            rows.push_back({stream, static_cast<int32_t>(i), g.prompt[i], i + 1 == g.prompt.size()});
        }
        std::vector<float> logits;
        backend->forward(rows, logits);
        // The oracle's last_top5 are the logits at the prompt's last
        // position: those that chose the first generated id.
        ASSERT_EQ(logits.size(), static_cast<size_t>(vocab));
        for (size_t k = 0; k < g.top5_ids.size(); ++k) {
            const float error = std::fabs(logits[g.top5_ids[k]] - g.top5_logits[k]) / std::max(1.0f, std::fabs(g.top5_logits[k]));
            worst = std::max(worst, error);
            EXPECT_LE(error, tolerance) << "case " << c << " top" << k << " id " << g.top5_ids[k];
        }
        std::vector<int32_t> produced;
        for (size_t step = 0; step < g.greedy.size(); ++step) {
            ASSERT_EQ(logits.size(), static_cast<size_t>(vocab));
            const int32_t next = engine::argmax(logits);
            produced.push_back(next);
            model::Row row{stream, static_cast<int32_t>(g.prompt.size() + step), next, true};
            if (step + 1 < g.greedy.size()) backend->forward({&row, 1}, logits);
        }
        EXPECT_EQ(produced, g.greedy) << "case " << c;
        backend->close_stream(stream);
    }
    std::printf("%s activations on %s: largest relative top-5 logit difference %.2e\n",
                kernels::activations_name(activations), kernels::isa_name(path_for(activations)), worst);
}

INSTANTIATE_TEST_SUITE_P(Activations, HfOracle, ::testing::Values(kernels::Activations::f32, kernels::Activations::bf16),
                         [](const auto& info) { return std::string(kernels::activations_name(info.param)); });

}  // namespace
}  // namespace tf::cpu
