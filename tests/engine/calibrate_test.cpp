// Start-up calibration against a fake backend whose forwards advance a fake
// clock by a cost the test chooses: what is timed, how often, and when the
// budget stops it are exact, whatever the machine's speed.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
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

    double now() const { return clock_; }
    std::function<double()> clock() const {
        return [this] { return clock_; };
    }
    // Forwards of each size whose every row wants logits: the timed ones
    // (the warm-up's prefix rows want none).
    std::map<int32_t, int> timed_forwards;

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
        clock_ += cost_(static_cast<int32_t>(rows.size()));
    }
    size_t open_streams() const { return streams_.size(); }

private:
    std::function<double(int32_t)> cost_;
    model::ModelConfig config_;
    std::map<model::StreamId, std::pair<int32_t, int32_t>> streams_;  // length, capacity
    double clock_ = 0.0;
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

}  // namespace
}  // namespace tf::engine
