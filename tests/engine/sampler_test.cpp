// Deterministic sampling: "the random number at a position is a pure
// function of (request seed, position)"; "Temperature 0 is argmax with
// lowest-id ties" (DESIGN.md 4).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "engine/sampler.h"

namespace tf::engine {
namespace {

SamplingParams params(float temperature, uint64_t seed = 7) {
    SamplingParams p;
    p.temperature = temperature;
    p.seed = seed;
    return p;
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
    std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
    EXPECT_EQ(argmax(logits), 1);
    EXPECT_EQ(sample(logits, params(0.0f), 10), 1);
    EXPECT_EQ(sample(logits, params(-1.0f), 11), 1);
}

// The definition argmax keeps: the first index, then a later one wherever
// its logit is strictly greater than the best so far.
int32_t argmax_by_definition(const std::vector<float>& logits) {
    int32_t best = 0;
    for (int32_t i = 1; i < static_cast<int32_t>(logits.size()); ++i) {
        if (logits[i] > logits[best]) best = i;
    }
    return best;
}

TEST(Sampler, ArgmaxFollowsItsDefinitionOnTiesNansZerosAndInfinities) {
    const float nan = std::nanf(""), inf = INFINITY;
    const std::vector<std::vector<float>> cases = {
        {1.0f},
        {nan, 5.0f, 7.0f},                 // a NaN first is kept
        {1.0f, nan, 3.0f, nan},            // later NaNs are never taken
        {-0.0f, 0.0f, -1.0f},              // -0 and +0 tie: the first stays
        {0.0f, -0.0f},
        {-inf, -inf, nan},
        {1.0f, inf, 2.0f, inf},
        {-3.0f, -2.0f, -2.0f, -5.0f, -2.0f, -1.0f, -1.0f, -7.0f, -1.0f, -9.0f},
    };
    for (const std::vector<float>& logits : cases) EXPECT_EQ(argmax(logits), argmax_by_definition(logits));
    // Vocabulary-sized rows with many ties, the maximum at the start, in the
    // lanes, in the tail past the last whole group of 8, and NaNs about.
    uint32_t state = 12345;
    auto next = [&] { return state = state * 1664525u + 1013904223u; };
    for (int32_t n : {7, 8, 9, 64, 1001, 151936}) {
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<float> logits(static_cast<size_t>(n));
            for (float& x : logits) x = static_cast<float>(next() % 50) - 25.0f;
            for (int k = 0; k < 3; ++k) logits[next() % n] = nan;
            if (trial % 4 == 1) logits[n - 1] = 100.0f;
            if (trial % 4 == 2) logits[0] = 100.0f;
            if (trial % 4 == 3) logits[next() % n] = 100.0f;
            ASSERT_EQ(argmax(logits), argmax_by_definition(logits)) << "n " << n << " trial " << trial;
        }
    }
}

TEST(Sampler, UniformIsAPureFunctionOfSeedAndPosition) {
    EXPECT_EQ(uniform_at(1, 5), uniform_at(1, 5));
    EXPECT_NE(uniform_at(1, 5), uniform_at(1, 6));
    EXPECT_NE(uniform_at(1, 5), uniform_at(2, 5));
    for (int64_t i = 0; i < 1000; ++i) {
        const double u = uniform_at(42, i);
        EXPECT_GE(u, 0.0);
        EXPECT_LT(u, 1.0);
    }
}

TEST(Sampler, SameSeedAndPositionGiveTheSameToken) {
    std::vector<float> logits(100);
    for (int i = 0; i < 100; ++i) logits[i] = std::sin(i * 0.37f) * 3;
    for (int64_t position = 0; position < 50; ++position) {
        EXPECT_EQ(sample(logits, params(1.0f, 99), position), sample(logits, params(1.0f, 99), position));
    }
}

TEST(Sampler, FollowsTheSoftmaxDistribution) {
    std::vector<float> logits = {0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};  // p = 0.1 .. 0.4
    std::map<int32_t, int> counts;
    const int n = 40000;
    for (int64_t position = 0; position < n; ++position) ++counts[sample(logits, params(1.0f, 3), position)];
    for (int token = 0; token < 4; ++token) {
        EXPECT_NEAR(counts[token] / static_cast<double>(n), (token + 1) / 10.0, 0.01) << token;
    }
}

TEST(Sampler, TemperatureSharpens) {
    std::vector<float> logits = {0.0f, 1.0f};
    int ones_hot = 0, ones_cold = 0;
    for (int64_t position = 0; position < 4000; ++position) {
        ones_hot += sample(logits, params(2.0f), position);
        ones_cold += sample(logits, params(0.25f), position);
    }
    EXPECT_GT(ones_cold, ones_hot);
    EXPECT_GT(ones_cold, 3800);
}

TEST(Sampler, TopKOneIsGreedy) {
    std::vector<float> logits = {1.0f, 3.0f, 2.9f, 0.0f};
    SamplingParams p = params(1.0f);
    p.top_k = 1;
    for (int64_t position = 0; position < 200; ++position) EXPECT_EQ(sample(logits, p, position), 1);
}

TEST(Sampler, TopKKeepsOnlyTheBest) {
    std::vector<float> logits = {1.0f, 3.0f, 2.9f, 0.0f, 2.8f};
    SamplingParams p = params(1.0f);
    p.top_k = 2;
    for (int64_t position = 0; position < 500; ++position) {
        const int32_t token = sample(logits, p, position);
        EXPECT_TRUE(token == 1 || token == 2) << token;
    }
}

TEST(Sampler, TopPCutsTheTail) {
    // p = 0.5, 0.3, 0.2: top_p 0.6 keeps the first two.
    std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    SamplingParams p = params(1.0f);
    p.top_p = 0.6f;
    std::map<int32_t, int> counts;
    for (int64_t position = 0; position < 8000; ++position) ++counts[sample(logits, p, position)];
    EXPECT_EQ(counts[2], 0);
    EXPECT_NEAR(counts[0] / 8000.0, 0.625, 0.02);
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
    std::vector<float> logits = {std::log(0.6f), std::log(0.35f), std::log(0.05f)};
    SamplingParams p = params(1.0f);
    p.min_p = 0.1f;  // floor 0.06: token 2 (0.05) goes
    for (int64_t position = 0; position < 3000; ++position) EXPECT_NE(sample(logits, p, position), 2);
}

TEST(Sampler, ASmallTopPIsGreedy) {
    std::vector<float> logits = {0.1f, 0.3f, 0.2f};
    SamplingParams p = params(1.0f);
    p.top_p = 0.01f;
    for (int64_t position = 0; position < 100; ++position) EXPECT_EQ(sample(logits, p, position), 1);
}

}  // namespace
}  // namespace tf::engine
