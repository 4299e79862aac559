// The copy window's length follows the backend's measured cost of verifying
// M rows: a draft grows only while its extra rows pay for themselves
// (docs/design.md, "Drafting").
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "engine/draft_window.h"

namespace tf::engine {
namespace {

TEST(CostCurve, IsRelativeToOneRowAndMonotone) {
    CostCurve curve({2.0, 2.2, 2.1, 3.0});
    EXPECT_DOUBLE_EQ(curve.relative(1), 1.0);
    EXPECT_DOUBLE_EQ(curve.relative(2), 1.1);
    EXPECT_DOUBLE_EQ(curve.relative(3), 1.1);  // timing noise never makes more rows cheaper
    EXPECT_DOUBLE_EQ(curve.relative(4), 1.5);
    EXPECT_DOUBLE_EQ(curve.relative(6), 2.3);  // extrapolated with the last slope
}

TEST(CostCurve, RejectsANonPositiveBase) { EXPECT_THROW(CostCurve({0.0, 1.0}), std::invalid_argument); }

TEST(CostCurveFromSamples, DrawsLinesBetweenSamples) {
    const CostCurve curve = CostCurve::from_samples({{1, 2.0}, {4, 8.0}, {8, 12.0}}, 10);
    const std::vector<double> want = {1, 2, 3, 4, 4.5, 5, 5.5, 6, 6.5, 7};  // cost / 2
    ASSERT_EQ(curve.max_rows(), 10);
    for (int32_t m = 1; m <= 10; ++m) EXPECT_DOUBLE_EQ(curve.relative(m), want[m - 1]) << m;
    EXPECT_DOUBLE_EQ(curve.relative(12), 8.0);  // past max_rows the last slope still holds
}

TEST(CostCurveFromSamples, FlatBelowTheFirstSampleAndAlongTheLastTwoPastTheLast) {
    const CostCurve curve = CostCurve::from_samples({{4, 1.0}, {2, 1.0}, {8, 1.8}}, 16);
    EXPECT_DOUBLE_EQ(curve.relative(1), 1.0);
    EXPECT_DOUBLE_EQ(curve.relative(2), 1.0);
    EXPECT_DOUBLE_EQ(curve.relative(6), 1.4);
    EXPECT_DOUBLE_EQ(curve.relative(12), 2.6);  // slope 0.2 per row from (4, 1) to (8, 1.8)
    EXPECT_DOUBLE_EQ(curve.relative(16), 3.4);
}

TEST(CostCurveFromSamples, ATimingAboveRunningTheRowsInPiecesIsCapped) {
    // 32 rows "took" 20 when 4 rows took 1: eight forwards of 4 would take 8.
    // 16 rows at 3 caps 32 rows at 6 more tightly still.
    const CostCurve curve = CostCurve::from_samples({{1, 1.0}, {4, 1.0}, {16, 3.0}, {32, 20.0}}, 32);
    EXPECT_DOUBLE_EQ(curve.relative(32), 6.0);
    EXPECT_DOUBLE_EQ(curve.relative(16), 3.0);
    // A 9-row sample is bounded by three forwards of 4 (ceil(9 / 4) = 3).
    EXPECT_DOUBLE_EQ(CostCurve::from_samples({{1, 1.0}, {4, 1.0}, {9, 7.0}}, 9).relative(9), 3.0);
    for (int32_t m = 2; m <= 32; ++m) EXPECT_GE(curve.relative(m), curve.relative(m - 1)) << m;
}

TEST(CostCurveFromSamples, NoisySamplesGiveAMonotoneCurve) {
    // 4 rows measured cheaper than 2: raised to 2's cost, so the slope past
    // the last sample is never negative either.
    const CostCurve curve = CostCurve::from_samples({{1, 1.0}, {2, 2.0}, {4, 1.5}}, 8);
    for (int32_t m = 2; m <= 8; ++m) EXPECT_GE(curve.relative(m), curve.relative(m - 1)) << m;
    EXPECT_DOUBLE_EQ(curve.relative(4), 2.0);
    EXPECT_DOUBLE_EQ(curve.relative(8), 2.0);
}

TEST(CostCurveFromSamples, KeepsTheCheapestOfOneRowCount) {
    const CostCurve curve = CostCurve::from_samples({{1, 3.0}, {1, 1.0}, {2, 2.0}, {1, 2.0}}, 2);
    EXPECT_DOUBLE_EQ(curve.relative(2), 2.0);
}

TEST(CostCurveFromSamples, UnusableSamplesAreIgnored) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const CostCurve curve =
        CostCurve::from_samples({{1, 0.0}, {2, 2.0}, {3, nan}, {4, 4.0}, {5, inf}, {0, 1.0}, {9, 1.0}}, 8);
    EXPECT_DOUBLE_EQ(curve.relative(1), 1.0);  // 2 is the first usable sample
    EXPECT_DOUBLE_EQ(curve.relative(4), 2.0);
    EXPECT_DOUBLE_EQ(curve.relative(8), 4.0);
    for (const auto& nothing : std::vector<std::vector<CostSample>>{{}, {{1, 0.0}}, {{1, -1.0}, {2, nan}}}) {
        const CostCurve flat = CostCurve::from_samples(nothing, 4);
        EXPECT_EQ(flat.max_rows(), 4);
        EXPECT_DOUBLE_EQ(flat.relative(4), 1.0);
    }
    EXPECT_DOUBLE_EQ(CostCurve::from_samples({{1, 5.0}}, 64).relative(64), 1.0);  // one sample: flat
}

TEST(ExpectedLanded, IsTheGeometricSum) {
    EXPECT_DOUBLE_EQ(expected_landed(0.5, 0), 0.0);
    EXPECT_DOUBLE_EQ(expected_landed(0.5, 1), 0.5);
    EXPECT_DOUBLE_EQ(expected_landed(0.5, 3), 0.875);
    EXPECT_DOUBLE_EQ(expected_landed(1.0, 4), 4.0);
}

TEST(BestWindow, AFlatCurveTakesEverythingThatMightLand) {
    EXPECT_EQ(best_window(CostCurve::flat(64), 0.9, 40), 40);
}

TEST(BestWindow, NothingWhenDraftsNeverLandAndRowsCost) {
    CostCurve linear({1, 2, 3, 4, 5, 6, 7, 8});
    EXPECT_EQ(best_window(linear, 0.01, 7), 0);
}

TEST(BestWindow, StopsWhereTheNextRowCostsMoreThanItLands) {
    // Each extra row costs 10% of a step; a token that lands with p = 0.9^k
    // pays while (1 + E[k]) / (1 + 0.1k) still grows.
    std::vector<double> cost;
    for (int m = 1; m <= 64; ++m) cost.push_back(1.0 + 0.1 * (m - 1));
    CostCurve curve(cost);
    const int32_t k = best_window(curve, 0.9, 63);
    EXPECT_GT(k, 2);
    EXPECT_LT(k, 20);
    const double at_k = (1 + expected_landed(0.9, k)) / curve.relative(1 + k);
    EXPECT_GE(at_k, (1 + expected_landed(0.9, k + 1)) / curve.relative(2 + k));
    EXPECT_GE(at_k, (1 + expected_landed(0.9, k - 1)) / curve.relative(k));
}

TEST(BestWindow, LongerWhenDraftsLandMore) {
    std::vector<double> cost;
    for (int m = 1; m <= 64; ++m) cost.push_back(1.0 + 0.05 * (m - 1));
    CostCurve curve(cost);
    EXPECT_LT(best_window(curve, 0.6, 63), best_window(curve, 0.95, 63));
}

// A curve shaped like tinycode's on this machine's 2 cores (bench-model):
// a fixed cost, then close to linear in the rows.
CostCurve tinycode_like() {
    return CostCurve::from_samples({{1, 1.0}, {2, 1.9}, {4, 1.9}, {8, 4.2}, {16, 5.9}, {32, 8.8}, {64, 18.0}}, 128);
}

TEST(SharedWindow, AloneIsBestWindow) {
    const CostCurve curve = tinycode_like();
    for (double p : {0.3, 0.7, 0.9, 0.99}) {
        EXPECT_EQ(best_shared_window(curve, p, 63, SharedRound{}, 0.2), best_window(curve, p, 63)) << p;
    }
}

TEST(SharedWindow, RowsAreNearlyFreeWhereTheCurveIsFlat) {
    EXPECT_EQ(best_shared_window(CostCurve::flat(128), 0.9, 40, SharedRound{30, 30, 30}, 0.2), 40);
}

TEST(SharedWindow, BesideManyRowsADraftsRowsCostLessOfTheRound) {
    // Each row costs 10% of a step. Alone, k rows take the round from 1 to
    // 1 + 0.1k; beside 40 rows, from 5 to 5 + 0.1k: relatively cheaper.
    std::vector<double> cost;
    for (int m = 1; m <= 128; ++m) cost.push_back(1.0 + 0.1 * (m - 1));
    const CostCurve curve(cost);
    const int32_t alone = best_shared_window(curve, 0.9, 63, SharedRound{}, 10.0);
    const int32_t shared = best_shared_window(curve, 0.9, 63, SharedRound{40}, 10.0);
    EXPECT_GT(shared, alone);
    // The chosen window maximizes the stream's tokens per unit of the round's cost.
    auto rate = [&](int32_t k) { return (1 + expected_landed(0.9, k)) / curve.relative(41 + k); };
    EXPECT_GE(rate(shared), rate(shared + 1));
    EXPECT_GE(rate(shared), rate(shared - 1));
}

TEST(SharedWindow, ACopyMayNotSlowItsRoundPastTheBound) {
    const CostCurve curve = tinycode_like();
    const SharedRound others{15, 15, 15};  // fifteen streams decoding one row each, none copying
    const int32_t bounded = best_shared_window(curve, 0.99, 63, others, 0.2);
    const int32_t unbounded = best_shared_window(curve, 0.99, 63, others, 100.0);
    EXPECT_GT(bounded, 0) << "some rows still fit";
    EXPECT_LT(bounded, unbounded);
    EXPECT_LE(curve.relative(16 + bounded), 1.2 * curve.relative(16));
    EXPECT_GT(curve.relative(17 + bounded), 1.2 * curve.relative(16)) << "the longest window within the bound";
}

TEST(SharedWindow, CopiesShareOneAllowanceWhileAStreamWithoutACopyWaits) {
    const CostCurve curve = tinycode_like();
    // Fifteen other streams, one of them without a copy; the others' copies
    // already took the round past 20% over its 16 plain rows: no room left.
    EXPECT_EQ(best_shared_window(curve, 0.99, 63, SharedRound{15 + 20, 15, 1}, 0.2), 0);
    // Every other stream copies: no one waits on a long round for a single
    // token, so only the price of the rows limits the window.
    EXPECT_EQ(best_shared_window(curve, 0.99, 63, SharedRound{15 + 20, 15, 0}, 0.2),
              best_shared_window(curve, 0.99, 63, SharedRound{15 + 20, 15, 0}, 100.0));
}

TEST(LandingRate, LearnsFromRounds) {
    LandingRate rate;
    EXPECT_DOUBLE_EQ(rate.probability(), 0.5);
    for (int i = 0; i < 50; ++i) rate.record(8, 8);
    EXPECT_GT(rate.probability(), 0.95);
    for (int i = 0; i < 50; ++i) rate.record(8, 0);
    EXPECT_LT(rate.probability(), 0.1);
}

TEST(LandingRate, RoundsWithoutDraftsTeachNothing) {
    LandingRate rate;
    rate.record(0, 0);
    EXPECT_DOUBLE_EQ(rate.probability(), 0.5);
}

}  // namespace
}  // namespace tf::engine
