// The counter-based sampler: a pure function of (logits, params, position).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "model/sampling.h"

namespace tf::model {
namespace {

TEST(Sampling, GreedyIsArgmaxWithTheLowestIdOnTies) {
    std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
    EXPECT_EQ(argmax_token(logits), 1);
    EXPECT_EQ(sample_token(logits, {0.0, 1.0, 9}, 5), 1);
    std::vector<float> nan_first = {NAN, 0.5f, 0.25f};
    EXPECT_EQ(argmax_token(nan_first), 1);
}

TEST(Sampling, TheRandomNumberIsAPureFunctionOfSeedAndPosition) {
    EXPECT_EQ(counter_uniform(7, 100), counter_uniform(7, 100));
    EXPECT_NE(counter_uniform(7, 100), counter_uniform(7, 101));
    EXPECT_NE(counter_uniform(7, 100), counter_uniform(8, 100));
    for (int64_t p = 0; p < 1000; ++p) {
        const double u = counter_uniform(3, p);
        ASSERT_GE(u, 0.0);
        ASSERT_LT(u, 1.0);
    }
}

TEST(Sampling, SameLogitsSeedAndPositionGiveTheSameTokenWhateverCameBefore) {
    std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.4f, 0.0f};
    const SamplingParams p{1.0, 1.0, 42};
    const int32_t first = sample_token(logits, p, 17);
    for (int i = 0; i < 10; ++i) sample_token(logits, p, i);  // no hidden state
    EXPECT_EQ(sample_token(logits, p, 17), first);
}

TEST(Sampling, FrequenciesFollowTheSoftmax) {
    std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    std::map<int32_t, int> counts;
    const int n = 20000;
    for (int64_t pos = 0; pos < n; ++pos) ++counts[sample_token(logits, {1.0, 1.0, 1}, pos)];
    EXPECT_NEAR(counts[0] / double(n), 0.5, 0.02);
    EXPECT_NEAR(counts[1] / double(n), 0.3, 0.02);
    EXPECT_NEAR(counts[2] / double(n), 0.2, 0.02);
}

TEST(Sampling, TopPKeepsOnlyTheMostLikelyIds) {
    std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
    for (int64_t pos = 0; pos < 2000; ++pos) {
        const int32_t id = sample_token(logits, {1.0, 0.7, 5}, pos);
        ASSERT_TRUE(id == 0 || id == 1) << id;  // 0.5 + 0.3 >= 0.7
    }
}

TEST(Sampling, LowTemperatureApproachesGreedy) {
    std::vector<float> logits = {1.0f, 1.5f, 0.5f};
    for (int64_t pos = 0; pos < 200; ++pos) ASSERT_EQ(sample_token(logits, {0.01, 1.0, 2}, pos), 1);
}

}  // namespace
}  // namespace tf::model
