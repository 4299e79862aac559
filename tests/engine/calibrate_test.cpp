// Start-up calibration against a fake backend whose forwards advance a fake
// clock by a cost the test chooses: what is timed, how often, and when the
// budget stops it are exact, whatever the machine's speed.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "engine/calibrate.h"

namespace tf::engine {
namespace {

class ClockedBackend : public model::Backend {
public:
    // `cost(rows)`: seconds the fake clock moves per forward of `rows` rows.
    explicit ClockedBackend(std::function<double(int32_t)> cost) : cost_(std::move(cost)) {
        config_.vocab_size = 100;
        config_.max_position_embeddings = 4096;
    }

    // A mixture of `num_experts` experts, k a row: a row reads its id's k
    // experts, and a row repeating an id at a later position half an expert
    // more (attention moves its router's input a little). Each distinct
    // expert a layer adds `seconds_per_expert` to a forward.
    void become_mixture(int32_t num_experts, int32_t k, double seconds_per_expert) {
        config_.moe.num_experts = num_experts;
        config_.moe.experts_per_token = k;
        k_ = k;
        seconds_per_expert_ = seconds_per_expert;
    }
    double experts_touched() const override { return touched_; }

    double now() const { return clock_; }
    std::function<double()> clock() const {
        return [this] { return clock_; };
    }
    // Forwards of each size whose every row wants logits: the timed ones
    // (the warm-up's prefix rows want none).
    std::map<int32_t, int> timed_forwards;
    std::map<int32_t, int> repeated_forwards;  // of those, the ones of one id repeated

    const model::ModelConfig& config() const override { return config_; }
    void open_stream(model::StreamId stream, int32_t capacity) override {
        if (!streams_.emplace(stream, std::pair<int32_t, int32_t>{0, capacity}).second) {
            throw std::invalid_argument("open");
        }
    }
    void close_stream(model::StreamId stream) override {
        if (streams_.erase(stream) == 0) throw std::invalid_argument("close");
    }
    int32_t stream_length(model::StreamId stream) const override { return streams_.at(stream).first; }
    void truncate(model::StreamId stream, int32_t length) override {
        auto& [kv, capacity] = streams_.at(stream);
        if (length > kv) throw std::invalid_argument("truncate");
        kv = length;
    }
    void copy_prefix(model::StreamId, model::StreamId, int32_t) override { throw std::logic_error("unused"); }
    void forward(std::span<const model::Row> rows, std::span<const model::SamplingParams> samplers,
                 model::RowOutputs& out) override {
        int32_t sampled = 0, wanted = 0;
        for (const model::Row& row : rows) {
            auto& [kv, capacity] = streams_.at(row.stream);
            if (row.position != kv || row.position >= capacity) throw std::invalid_argument("position");
            if (row.token < 0 || row.token >= config_.vocab_size) throw std::invalid_argument("token");
            if (row.sampler >= static_cast<int32_t>(samplers.size())) throw std::invalid_argument("sampler");
            ++kv;
            sampled += row.sampler >= 0 ? 1 : 0;
            wanted += row.want_logits ? 1 : 0;
        }
        out.tokens.assign(static_cast<size_t>(sampled), 0);
        out.logits.assign(static_cast<size_t>(wanted) * config_.vocab_size, 0.0f);
        if (sampled == static_cast<int32_t>(rows.size())) ++timed_forwards[sampled];
        std::set<model::TokenId> ids;
        for (const model::Row& row : rows) ids.insert(row.token);
        if (config_.moe.enabled()) {
            const auto distinct = static_cast<double>(ids.size());
            touched_ = std::min<double>(config_.moe.num_experts, k_ * distinct) + 0.5 * (rows.size() - distinct);
        }
        if (rows.size() > 1 && ids.size() == 1) ++repeated_forwards[static_cast<int32_t>(rows.size())];
        clock_ += cost_(static_cast<int32_t>(rows.size())) + seconds_per_expert_ * touched_;
    }
    size_t open_streams() const { return streams_.size(); }

private:
    std::function<double(int32_t)> cost_;
    model::ModelConfig config_;
    std::map<model::StreamId, std::pair<int32_t, int32_t>> streams_;  // length, capacity
    double clock_ = 0.0;
    int32_t k_ = 0;
    double seconds_per_expert_ = 0.0;
    double touched_ = 0.0;
};

CalibrationOptions options_for(const ClockedBackend& backend, double budget, int32_t max_rows = 64) {
    CalibrationOptions o;
    o.max_rows = max_rows;
    o.budget_seconds = budget;
    o.clock = backend.clock();
    return o;
}

void expect_usable(const CostCurve& curve, int32_t max_rows) {
    ASSERT_EQ(curve.max_rows(), max_rows);
    EXPECT_DOUBLE_EQ(curve.relative(1), 1.0);
    for (int32_t m = 2; m <= 2 * max_rows; ++m) {
        EXPECT_TRUE(std::isfinite(curve.relative(m))) << m;
        EXPECT_GE(curve.relative(m), curve.relative(m - 1)) << m;
    }
}

TEST(DefaultSampleRows, CoarseFirstThenThePointsBetween) {
    EXPECT_EQ(default_sample_rows(64), (std::vector<int32_t>{1, 4, 16, 64, 2, 8, 32}));
    EXPECT_EQ(default_sample_rows(32), (std::vector<int32_t>{1, 4, 16, 32, 2, 8}));
    EXPECT_EQ(default_sample_rows(48), (std::vector<int32_t>{1, 4, 16, 48, 2, 8, 32}));
    EXPECT_EQ(default_sample_rows(8), (std::vector<int32_t>{1, 4, 8, 2}));
    EXPECT_EQ(default_sample_rows(3), (std::vector<int32_t>{1, 3, 2}));
    EXPECT_EQ(default_sample_rows(1), (std::vector<int32_t>{1}));
}

TEST(Calibrate, WithTimeToSpareEverySampleIsTimedRepeatsTimes) {
    // A fixed part (reading the weights) and a part per row: a straight
    // line, which the lines between samples reproduce exactly.
    ClockedBackend backend([](int32_t m) { return 0.004 + 0.001 * m; });
    const Calibration c = measure_cost_curve(backend, options_for(backend, 100.0));
    EXPECT_EQ(backend.timed_forwards,
              (std::map<int32_t, int>{{1, 3}, {2, 3}, {4, 3}, {8, 3}, {16, 3}, {32, 3}, {64, 3}}));
    EXPECT_EQ(c.forwards, 7 * 3);
    EXPECT_FALSE(c.budget_spent);
    EXPECT_TRUE(c.untimed.empty());
    ASSERT_EQ(c.measured.size(), 7u);
    for (const CostSample& s : c.measured) EXPECT_NEAR(s.cost, 0.004 + 0.001 * s.rows, 1e-9) << s.rows;
    for (int32_t m = 1; m <= 64; ++m) EXPECT_NEAR(c.curve.relative(m), (0.004 + 0.001 * m) / 0.005, 1e-6) << m;
    EXPECT_NEAR(c.warmup_seconds, 0.008, 1e-12);  // the 4-row prefix, outside the budget
    EXPECT_DOUBLE_EQ(c.seconds, backend.now());
    EXPECT_EQ(c.summary(), "M = 1, 2, 4, 8, 16, 32, 64 timed in 21 forwards, 8 ms warm-up");
    EXPECT_EQ(backend.open_streams(), 0u);
}

TEST(Calibrate, KeepsTheBestOfTheRepeats) {
    std::map<int32_t, int> runs;
    // The first forward of each size is disturbed (twice as slow); the best is a calm one.
    ClockedBackend backend([&runs](int32_t m) { return (runs[m]++ == 0 ? 2.0 : 1.0) * (0.01 + 0.001 * m); });
    const Calibration c = measure_cost_curve(backend, options_for(backend, 100.0, 8));
    ASSERT_EQ(c.measured.size(), 4u);
    for (const CostSample& s : c.measured) EXPECT_NEAR(s.cost, 0.01 + 0.001 * s.rows, 1e-9) << s.rows;
}

TEST(Calibrate, StopsWhereTheBudgetEndsAndExtrapolatesFromTheLastTwoSamples) {
    ClockedBackend backend([](int32_t m) { return 0.01 + 0.01 * m; });
    const Calibration c = measure_cost_curve(backend, options_for(backend, 0.3));
    // M = 1 and 4 (0.07 s), 16 (predicted on their line: 0.17 s, fits), not
    // 64 (0.65 s); 2 (0.03 s) fits, 8 (0.09 s) no longer; then one repeat of
    // M = 1: 0.29 s of 0.3.
    EXPECT_EQ(backend.timed_forwards, (std::map<int32_t, int>{{1, 2}, {2, 1}, {4, 1}, {16, 1}}));
    EXPECT_EQ(c.untimed, (std::vector<int32_t>{8, 32, 64}));
    EXPECT_TRUE(c.budget_spent);
    EXPECT_LE(c.seconds - c.warmup_seconds, 0.3);
    EXPECT_EQ(c.summary(), "M = 1, 2, 4, 16 timed in 5 forwards, 50 ms warm-up; over budget: M = 8, 32, 64");
    // Past 16, the line through 4 and 16 goes on; 8 lies on the line from 4 to 16.
    for (int32_t m = 1; m <= 64; ++m) EXPECT_NEAR(c.curve.relative(m), (0.01 + 0.01 * m) / 0.02, 1e-6) << m;
    expect_usable(c.curve, 64);
}

TEST(Calibrate, ASlowForwardGivesUpRepeatsAndFinePointsFirst) {
    // Memory-bound: every forward costs the same 0.2 s. In 1.1 s the
    // coarse points 1, 4, 16, 64 and then 2 are timed once each (1 s).
    ClockedBackend backend([](int32_t) { return 0.2; });
    const Calibration c = measure_cost_curve(backend, options_for(backend, 1.1));
    EXPECT_LE(c.seconds - c.warmup_seconds, 1.1);
    EXPECT_EQ(backend.timed_forwards, (std::map<int32_t, int>{{1, 1}, {2, 1}, {4, 1}, {16, 1}, {64, 1}}));
    EXPECT_EQ(c.untimed, (std::vector<int32_t>{8, 32}));
    EXPECT_DOUBLE_EQ(c.curve.relative(64), 1.0);
    expect_usable(c.curve, 64);
}

TEST(Calibrate, AForwardLongerThanTheBudgetStillGivesASlope) {
    // The warm-up and the first two row counts are the least there is to
    // know; nothing more runs.
    ClockedBackend backend([](int32_t m) { return 5.0 * m; });
    const Calibration c = measure_cost_curve(backend, options_for(backend, 1.0));
    EXPECT_EQ(c.forwards, 2);
    EXPECT_EQ(backend.timed_forwards, (std::map<int32_t, int>{{1, 1}, {4, 1}}));
    EXPECT_EQ(c.summary(), "M = 1, 4 timed in 2 forwards, 20000 ms warm-up; over budget: M = 2, 8, 16, 32, 64");
    for (int32_t m = 1; m <= 64; ++m) EXPECT_NEAR(c.curve.relative(m), m, 1e-9) << m;
    expect_usable(c.curve, 64);
    EXPECT_EQ(backend.open_streams(), 0u);
}

TEST(Calibrate, ForwardsTooFastForTheClockGiveAFlatCurve) {
    ClockedBackend backend([](int32_t) { return 0.0; });
    const Calibration c = measure_cost_curve(backend, options_for(backend, 1.0, 32));
    EXPECT_EQ(c.measured.size(), 6u);
    expect_usable(c.curve, 32);
    EXPECT_DOUBLE_EQ(c.curve.relative(32), 1.0);
}

TEST(Calibrate, NoisyTimingsStillGiveAMonotoneCurve) {
    // A disturbed small forward measured dearer than larger ones: the curve
    // never lets more rows cost less.
    ClockedBackend backend([](int32_t m) { return m == 4 ? 0.05 : 0.01 + 0.0001 * m; });
    const Calibration c = measure_cost_curve(backend, options_for(backend, 100.0));
    expect_usable(c.curve, 64);
    EXPECT_GE(c.curve.relative(8), c.curve.relative(4));
}

TEST(Calibrate, ChosenRowCountsAndAShortModelContext) {
    ClockedBackend backend([](int32_t m) { return 0.001 * m; });
    CalibrationOptions o = options_for(backend, 100.0, 8);
    o.sample_rows = {8, 3, 3, 0, 99, 1};  // timed in this order, once each, out-of-range ones dropped
    o.repeats = 1;
    o.context = 10000;  // more than the model has room for: clamped
    const Calibration c = measure_cost_curve(backend, o);
    EXPECT_EQ(backend.timed_forwards, (std::map<int32_t, int>{{1, 1}, {3, 1}, {8, 1}}));
    EXPECT_NEAR(c.curve.relative(2), 2.0, 1e-9);  // between 1 and 3
    EXPECT_NEAR(c.curve.relative(5), 5.0, 1e-9);  // between 3 and 8
}

TEST(Calibrate, TheScratchStreamIsClosedWhenAForwardThrows) {
    ClockedBackend backend([](int32_t m) -> double {
        if (m == 16) throw std::runtime_error("out of memory");
        return 0.001;
    });
    EXPECT_THROW(measure_cost_curve(backend, options_for(backend, 100.0)), std::runtime_error);
    EXPECT_EQ(backend.open_streams(), 0u);
}

// A mixture (ClockedBackend::become_mixture) costing 10 ms a row plus 1 ms
// a distinct expert: m distinct ids read min(64, 4m) experts, one id
// repeated 4 + (m - 1) / 2.
double mixture_seconds(int32_t m, bool repeated) {
    return 0.01 * m + 0.001 * (repeated ? 4 + 0.5 * (m - 1) : std::min(64.0, 4.0 * m));
}

TEST(CalibrateMixture, TimesEachRowCountWithDistinctIdsThenOneIdRepeated) {
    ClockedBackend backend([](int32_t m) { return 0.01 * m; });
    backend.become_mixture(64, 4, 0.001);
    const Calibration c = measure_cost_curve(backend, options_for(backend, 100.0));
    EXPECT_EQ(backend.timed_forwards,
              (std::map<int32_t, int>{{1, 3}, {2, 6}, {4, 6}, {8, 6}, {16, 6}, {32, 6}, {64, 6}}));
    EXPECT_EQ(backend.repeated_forwards, (std::map<int32_t, int>{{2, 3}, {4, 3}, {8, 3}, {16, 3}, {32, 3}, {64, 3}}))
        << "M = 1 reads one token's experts whatever its id";
    ASSERT_EQ(c.experts.size(), 7u);
    for (const ExpertSample& e : c.experts) {
        EXPECT_DOUBLE_EQ(e.distinct_experts, std::min(64.0, 4.0 * e.rows)) << e.rows;
        EXPECT_NEAR(e.distinct_seconds, mixture_seconds(e.rows, false), 1e-9) << e.rows;
        if (e.rows == 1) continue;
        EXPECT_TRUE(e.repeated_timed);
        EXPECT_DOUBLE_EQ(e.repeated_experts, 4 + 0.5 * (e.rows - 1)) << e.rows;
        EXPECT_NEAR(e.repeated_seconds, mixture_seconds(e.rows, true), 1e-9) << e.rows;
    }
    EXPECT_NEAR(c.seconds_per_expert, 0.001, 1e-9) << "what each distinct expert adds, recovered";
    EXPECT_TRUE(c.repeated_untimed.empty());
    EXPECT_FALSE(c.budget_spent);
    ASSERT_NE(c.curve.experts(), nullptr);
    EXPECT_TRUE(c.summary().ends_with(
        "; M = 16: 11.5 experts a layer with repeated ids, 64.0 with distinct ids, 1.000 ms an expert"))
        << c.summary();
}

TEST(CalibrateMixture, PricesRoundsByTheExpertsTheyAreExpectedToRead) {
    ClockedBackend backend([](int32_t m) { return 0.01 * m; });
    backend.become_mixture(64, 4, 0.001);
    const Calibration c = measure_cost_curve(backend, options_for(backend, 100.0));
    ExpertCosts& experts = *c.curve.experts();
    const double one = mixture_seconds(1, false);
    // Seeded halfway between the two calibration points.
    EXPECT_NEAR(experts.expected_experts(8), (32 + 7.5) / 2, 1e-9);
    EXPECT_NEAR(c.curve.relative(8), (0.08 + 0.001 * (32 + 7.5) / 2) / one, 1e-9);
    // Rounds that read as many experts as distinct ids: the distinct-id cost.
    for (int i = 0; i < 200; ++i) experts.observe(8, 32.0);
    EXPECT_NEAR(c.curve.relative(8), mixture_seconds(8, false) / one, 1e-6);
    // Rounds that share experts like one repeated id: the few-experts cost.
    for (int i = 0; i < 200; ++i) experts.observe(8, 7.5);
    EXPECT_NEAR(c.curve.relative(8), mixture_seconds(8, true) / one, 1e-6);
    expect_usable(c.curve, 64);
}

TEST(CalibrateMixture, AShortBudgetTimesLargeRowCountsWithDistinctIdsOnly) {
    ClockedBackend backend([](int32_t m) { return 0.01 * m; });
    backend.become_mixture(64, 4, 0.001);
    const Calibration c = measure_cost_curve(backend, options_for(backend, 0.5));
    // 1, 4 and 4 repeated (0.116 s); 16 (0.224 s) fits, 16 repeated no longer;
    // 64 does not; 2 and 2 repeated (0.053 s) do.
    EXPECT_EQ(backend.repeated_forwards.count(16), 0u);
    EXPECT_EQ(c.repeated_untimed, (std::vector<int32_t>{16}));
    EXPECT_TRUE(c.budget_spent);
    EXPECT_LE(c.seconds - c.warmup_seconds, 0.5);
    EXPECT_NEAR(c.seconds_per_expert, 0.001, 1e-9);
    // M = 16's few-experts cost: its distinct timing less what the experts
    // one id repeated would spare (their count on the line through 2 and 4).
    const ExpertCalibration& priced = c.curve.experts()->calibration();
    EXPECT_NEAR(priced.few_experts[15], 11.5, 1e-9);
    EXPECT_NEAR(priced.few_cost[15], mixture_seconds(16, true), 1e-9);
    EXPECT_TRUE(c.summary().ends_with("; distinct ids only: M = 16")) << c.summary();
}

TEST(CalibrateMixture, AForwardLongerThanTheBudgetStillGivesASlopePerExpert) {
    ClockedBackend backend([](int32_t m) { return 5.0 * m; });
    backend.become_mixture(64, 4, 0.001);
    const Calibration c = measure_cost_curve(backend, options_for(backend, 1.0));
    EXPECT_EQ(backend.timed_forwards, (std::map<int32_t, int>{{1, 1}, {4, 2}}));
    EXPECT_EQ(backend.repeated_forwards, (std::map<int32_t, int>{{4, 1}}));
    EXPECT_NEAR(c.seconds_per_expert, 0.001, 1e-9);
    expect_usable(c.curve, 64);
}

TEST(CalibrateMixture, ADenseModelTimesEachRowCountOnceAndPricesNoExperts) {
    ClockedBackend backend([](int32_t m) { return 0.01 * m; });
    const Calibration c = measure_cost_curve(backend, options_for(backend, 100.0, 8));
    EXPECT_TRUE(backend.repeated_forwards.empty());
    EXPECT_TRUE(c.experts.empty());
    EXPECT_EQ(c.curve.experts(), nullptr);
}

TEST(ExpertCalibration, RepeatedIdsThatReadNoFewerExpertsGiveNoSlope) {
    // The check the calibration makes: a repeated id that reads as many
    // experts as distinct ids says nothing about an expert's cost.
    const std::vector<ExpertSample> samples{{1, 4, 0, false, 0.01, 0}, {4, 16, 16, true, 0.05, 0.04}};
    const std::optional<ExpertCalibration> priced = expert_calibration(samples, 4, 64);
    ASSERT_TRUE(priced.has_value());
    EXPECT_EQ(priced->seconds_per_expert, 0.0);
}

}  // namespace
}  // namespace tf::engine
