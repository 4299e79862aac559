// Correctness against Hugging Face transformers: greedy decoding of the
// embedded tinycode model reproduces the fp32 oracle's greedy ids exactly
// with either activation precision over an fp32 KV cache, and the top-5
// logits at the end of the prompt are within 1e-3 (f32 activations) or
// 1e-2 (bf16 activations, measured at 2.4e-3: rounding each matmul input
// to 8 significant bits moves logits of size ~15 by a few hundredths).
//
// Over the default f16 KV cache, f32 activations keep every case too.
// bf16 activations over it may turn a near tie (case 4, token 24, where the
// fp32 forward puts the oracle's id 0.005 above ours, went the other way
// before attention folded its keys in blocks): a case may leave the oracle
// only where the fp32 forward's margin is below 0.02.
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

std::unique_ptr<CpuBackend> backend_for(kernels::Activations activations, kernels::KvType kv) {
    const kernels::Isa isa = path_for(activations);
    return load_cpu_backend(tinycode_dir(), 0, isa, activations, {}, kernels::quant_vnni_supported(isa), kv);
}

// The fp32 forward's (f32 activations, f32 KV) logit of the oracle's id
// less its logit of `other`, after the prompt and the oracle's first `step`
// ids: how near a tie the oracle's choice was there.
float reference_margin(const GreedyCase& g, size_t step, int32_t other) {
    auto reference = backend_for(kernels::Activations::f32, kernels::KvType::f32);
    std::vector<int32_t> ids = g.prompt;
    ids.insert(ids.end(), g.greedy.begin(), g.greedy.begin() + static_cast<std::ptrdiff_t>(step));
    reference->open_stream(0, static_cast<int32_t>(ids.size()));
    std::vector<model::Row> rows;
    for (size_t i = 0; i < ids.size(); ++i) rows.push_back({0, static_cast<int32_t>(i), ids[i], i + 1 == ids.size()});
    std::vector<float> logits;
    reference->forward(rows, logits);
    return logits[g.greedy[step]] - logits[other];
}

struct OracleParams {
    kernels::Activations activations;
    kernels::KvType kv;
};

class HfOracle : public ::testing::TestWithParam<OracleParams> {};

TEST_P(HfOracle, GreedyDecodingOfTinycodeMatchesTransformersExactly) {
    const kernels::Activations activations = GetParam().activations;
    const kernels::KvType kv = GetParam().kv;
    auto backend = backend_for(activations, kv);
    const float tolerance = activations == kernels::Activations::f32 ? 1e-3f : 1e-2f;
    // Where a 16-bit cache may leave the oracle (see the top).
    const bool near_ties_may_go = kv != kernels::KvType::f32 && activations == kernels::Activations::bf16;
    int kept = 0;
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
        size_t same = 0;
        while (same < produced.size() && produced[same] == g.greedy[same]) ++same;
        if (same == produced.size()) {
            ++kept;
        } else if (near_ties_may_go) {
            const float margin = reference_margin(g, same, produced[same]);
            EXPECT_LT(margin, 0.02f) << "case " << c << " leaves the oracle at token " << same + 1;
            std::printf("case %zu leaves the oracle at token %zu, a near tie: margin %.4f\n", c + 1, same + 1, margin);
        } else {
            EXPECT_EQ(produced, g.greedy) << "case " << c;
        }
        backend->close_stream(stream);
    }
    EXPECT_GE(kept, static_cast<int>(cases.size()) - (near_ties_may_go ? 1 : 0));
    std::printf("%s activations on %s, %s KV: %d of %zu cases kept, largest relative top-5 logit difference %.2e\n",
                kernels::activations_name(activations), kernels::isa_name(path_for(activations)),
                kernels::kv_type_name(kv), kept, cases.size(), worst);
}

INSTANTIATE_TEST_SUITE_P(
    ActivationsAndKv, HfOracle,
    ::testing::Values(OracleParams{kernels::Activations::f32, kernels::KvType::f32},
                      OracleParams{kernels::Activations::bf16, kernels::KvType::f32},
                      OracleParams{kernels::Activations::f32, kernels::KvType::f16},
                      OracleParams{kernels::Activations::bf16, kernels::KvType::f16}),
    [](const auto& info) {
        return std::string(kernels::activations_name(info.param.activations)) + "_kv_" +
               kernels::kv_type_name(info.param.kv);
    });

}  // namespace
}  // namespace tf::cpu
