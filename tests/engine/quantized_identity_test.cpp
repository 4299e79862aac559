// Identical tokens with quantized weights: for every --quantize format, a
// mix of fresh, regenerated and pasted requests, served together in groups,
// gives each request the very tokens it gets alone with no drafts, whether
// Recall is off, on (copies landing) or read-only. Quantized weights change
// which tokens a model writes, never whether drafts can change them.
#include <gtest/gtest.h>

#include "engine_fixture.h"
#include "model/quant_blocks.h"

namespace tf::engine {
namespace {

using namespace testing;
using model::QuantType;

class QuantizedIdentity : public ::testing::TestWithParam<QuantType> {
protected:
    void SetUp() override {
        cpu::WeightOptions options;
        options.quantize = GetParam();
        backend_ = cpu::load_cpu_backend(tinycode_dir(), 2, options);
        std::mt19937 rng(20261201);
        auto random_tokens = [&](int n) {
            std::vector<TokenId> t;
            for (int i = 0; i < n; ++i) t.push_back(static_cast<TokenId>(rng() % 8189));
            return t;
        };
        const float temperatures[] = {0.0f, 0.8f, 1.0f};
        for (int i = 0; i < 18; ++i) {
            requests_.push_back(make_request(random_tokens(8 + static_cast<int>(rng() % 24)), temperatures[i % 3],
                                             i % 2 ? 0.9f : 1.0f, rng(), 32));
        }
        for (int i = 0; i < 18; ++i) reference_.push_back(alone(requests_[i]));
        for (int i = 0; i < 10; ++i) {  // regenerated
            const size_t from = rng() % 18;
            requests_.push_back(requests_[from]);
            reference_.push_back(reference_[from]);
        }
        for (int i = 0; i < 8; ++i) {  // an earlier reply pasted into a new prompt
            const size_t from = rng() % 18;
            std::vector<TokenId> prompt = random_tokens(4);
            prompt.insert(prompt.end(), requests_[from].prompt.begin(), requests_[from].prompt.end());
            prompt.insert(prompt.end(), reference_[from].begin(), reference_[from].end());
            prompt.insert(prompt.end(), requests_[from].prompt.begin(), requests_[from].prompt.end());
            requests_.push_back(make_request(prompt, temperatures[i % 3], 1.0f, rng(), 32));
            reference_.push_back(alone(requests_.back()));
        }
    }

    std::vector<TokenId> alone(const GenerationRequest& r) {
        Engine engine(*backend_, CostCurve::flat(64), plain_options());
        return engine.generate(r).tokens;
    }

    void expect_identical(Engine& engine, const char* mode) {
        for (size_t begin = 0, size = 1; begin < requests_.size(); begin += size, size = size % 8 + 1) {
            const size_t end = std::min(requests_.size(), begin + size);
            const std::vector<GenerationRequest> group(requests_.begin() + begin, requests_.begin() + end);
            const auto replies = run_together(engine, group);
            for (size_t i = begin; i < end; ++i) {
                ASSERT_EQ(replies[i - begin], reference_[i])
                    << model::quant_type_name(GetParam()) << ", " << mode << ": request " << i;
            }
        }
    }

    std::unique_ptr<model::Backend> backend_;
    std::vector<GenerationRequest> requests_;
    std::vector<std::vector<TokenId>> reference_;
};

TEST_P(QuantizedIdentity, RepliesAreTheSameTokensWithRecallOffOnAndReadOnly) {
    {
        Engine off(*backend_, CostCurve::flat(64), EngineOptions{});
        expect_identical(off, "recall off (own-context drafts)");
    }
    TempDir dir("quantized-identity");
    {
        auto record = open_record(dir.path(), false);
        Engine on(*backend_, CostCurve::flat(64), EngineOptions{}, nullptr, record.get());
        expect_identical(on, "recall on");
        EXPECT_GT(on.totals().copy_landed, 0) << "regenerated requests land copies from the record";
    }
    {
        auto record = open_record(dir.path(), true);
        const uint64_t ids_before = record->stats().ids;
        Engine read_only(*backend_, CostCurve::flat(64), EngineOptions{}, nullptr, record.get());
        expect_identical(read_only, "recall read-only");
        EXPECT_GT(read_only.totals().copy_landed, 0);
        EXPECT_EQ(record->stats().ids, ids_before) << "read-only adds nothing";
    }
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizedIdentity,
                         ::testing::Values(QuantType::q8_0, QuantType::q4_0, QuantType::q4_k, QuantType::q6_k,
                                           QuantType::q5_k, QuantType::q5_0),
                         [](const auto& info) { return std::string(model::quant_type_name(info.param)); });

}  // namespace
}  // namespace tf::engine
