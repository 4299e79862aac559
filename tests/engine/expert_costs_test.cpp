// Pricing a mixture's rounds by the experts they read: the seed, what the
// engine's rounds teach, and the copy window that follows.
#include <gtest/gtest.h>

#include <memory>

#include "engine/draft_window.h"
#include "engine/expert_costs.h"

namespace tf::engine {
namespace {

// Over 1..16 rows: 10 ms and 1 ms a row when the rows repeat one id, which
// reads 4 + (m - 1) / 4 experts a layer; distinct ids read min(64, 4m);
// 1 ms each extra expert.
double few_cost(int32_t m) { return 0.01 + 0.001 * m; }
double few_experts(int32_t m) { return 4 + 0.25 * (m - 1); }

ExpertCalibration calibration() {
    ExpertCalibration c;
    for (int32_t m = 1; m <= 16; ++m) {
        c.few_cost.push_back(few_cost(m));
        c.few_experts.push_back(4 + 0.25 * (m - 1));
        c.distinct_experts.push_back(std::min(64.0, 4.0 * m));
    }
    c.seconds_per_expert = 0.001;
    return c;
}

TEST(ExpertCosts, StartsHalfwayBetweenOneRepeatedIdAndDistinctIds) {
    const ExpertCosts costs(calibration());
    EXPECT_DOUBLE_EQ(costs.expected_experts(1), 4.0);
    EXPECT_DOUBLE_EQ(costs.expected_experts(4), (16 + few_experts(4)) / 2);
    EXPECT_DOUBLE_EQ(costs.expected_experts(99), costs.expected_experts(16)) << "rows past the curve: its last";
    EXPECT_NEAR(costs.relative(4), (few_cost(4) + 0.001 * (16 - few_experts(4)) / 2) / few_cost(1), 1e-12);
}

TEST(ExpertCosts, RoundsThatReadMoreExpertsArePricedHigher) {
    ExpertCosts costs(calibration());
    const double seeded = costs.relative(8);
    costs.observe(8, 30.0);
    EXPECT_GT(costs.relative(8), seeded);
    costs.observe(8, 6.0);
    costs.observe(8, 6.0);
    EXPECT_LT(costs.relative(8), seeded);
}

TEST(ExpertCosts, TheEstimateFollowsTheRoundsAndForgetsTheSeed) {
    ExpertCosts costs(calibration(), 1.0, 0.9);
    costs.observe(4, 9.0);
    // One prior round at the seed, decayed once, beside one observed round.
    const double seed = (16 + few_experts(4)) / 2;
    EXPECT_NEAR(costs.expected_experts(4), (0.9 * seed + 9.0) / 1.9, 1e-12);
    for (int i = 0; i < 300; ++i) costs.observe(4, 9.0);
    EXPECT_NEAR(costs.expected_experts(4), 9.0, 1e-9);
    EXPECT_NEAR(costs.relative(4), (few_cost(4) + 0.001 * (9.0 - few_experts(4))) / few_cost(1), 1e-9);
    EXPECT_DOUBLE_EQ(costs.expected_experts(5), (20 + few_experts(5)) / 2) << "other row counts learn alone";
}

TEST(ExpertCosts, IgnoresRowCountsOutsideTheCurveAndRoundsThatCountNothing) {
    ExpertCosts costs(calibration());
    const double before = costs.relative(16);
    costs.observe(17, 64.0);
    costs.observe(0, 64.0);
    costs.observe(16, 0.0);
    EXPECT_DOUBLE_EQ(costs.relative(16), before);
}

TEST(ExpertCosts, MoreRowsNeverCostLessAndOneRowCostsOne) {
    ExpertCosts costs(calibration());
    for (int i = 0; i < 50; ++i) costs.observe(6, 24.0);  // a dear round count beside cheap neighbours
    for (int i = 0; i < 50; ++i) costs.observe(1, 2.0);   // fewer than one row reads: noise
    EXPECT_DOUBLE_EQ(costs.relative(1), 1.0);
    for (int32_t m = 2; m <= 40; ++m) EXPECT_GE(costs.relative(m), costs.relative(m - 1)) << m;
    EXPECT_GE(costs.relative(7), costs.relative(6));
}

TEST(ExpertCosts, CopiesOfACurveShareWhatTheRoundsTaught) {
    const CostCurve dense = CostCurve::from_samples({{1, 0.014}, {16, 0.224}}, 16);
    const CostCurve priced = dense.with_experts(std::make_shared<ExpertCosts>(calibration()));
    const CostCurve copy = priced;  // a recall reader's
    EXPECT_EQ(dense.experts(), nullptr);
    priced.experts()->observe(8, 30.0);
    EXPECT_DOUBLE_EQ(copy.relative(8), priced.experts()->relative(8));
    EXPECT_NEAR(dense.relative(16), 0.224 / 0.014, 1e-12) << "the curve it was made from is unchanged";
}

TEST(ExpertCosts, DraftsThatShareExpertsGetLongerWindows) {
    // Priced as distinct ids (today's calibration curve) against rounds
    // observed to read few more experts than one token: the same landing
    // rate buys a longer window when the round is cheaper.
    const auto experts = std::make_shared<ExpertCosts>(calibration());
    const CostCurve curve = CostCurve::flat(16).with_experts(experts);
    std::vector<double> distinct;
    for (int32_t m = 1; m <= 16; ++m) distinct.push_back(few_cost(m) + 0.001 * (std::min(64.0, 4.0 * m) - few_experts(m)));
    const CostCurve upper(distinct);
    for (int i = 0; i < 300; ++i) {
        for (int32_t m = 1; m <= 16; ++m) experts->observe(m, few_experts(m) + 0.5);
    }
    const int32_t shared = best_window(curve, 0.8, 15);
    const int32_t unshared = best_window(upper, 0.8, 15);
    EXPECT_GT(shared, unshared);
    EXPECT_GT(unshared, 0);
}

}  // namespace
}  // namespace tf::engine
