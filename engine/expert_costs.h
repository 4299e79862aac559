// Pricing a mixture of experts' rounds by the experts they read
// (docs/design.md, "Drafting"), so a window that would send the round to
// more experts is charged for them.
//
// A forward of a mixture reads each distinct expert its rows route to once,
// so its cost grows with the number of distinct experts as well as with its
// rows. Start-up calibration (calibrate.h) times each row count twice: with
// rows that route to few experts (one id repeated) and with distinct ids
// (about as many experts as unrelated tokens). The difference gives the
// cost of one more distinct expert a layer, and a round of m rows is priced
//
//     cost(m) = few_cost(m) + seconds_per_expert * (expected(m) - few_experts(m))
//
// where expected(m) is what the engine's own decode rounds of m rows read
// lately: a draft's consecutive tokens share experts more than unrelated
// ids and less than one repeated id, and how much depends on the model and
// the text, so it is learned rather than guessed.
//
// Thread-safe: observe() from the thread that runs forwards, relative() and
// expected_experts() from any thread (the recall readers price copies).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace tf::engine {

// What calibration measured, over row counts 1..max_rows (index m - 1).
struct ExpertCalibration {
    std::vector<double> few_cost;          // seconds: a forward of m rows of one repeated id
    std::vector<double> few_experts;       // distinct experts a layer those rows read
    std::vector<double> distinct_experts;  // distinct experts a layer m distinct ids read
    double seconds_per_expert = 0;         // one more distinct expert a layer, in a forward
};

// The seed of expected(m) before any round is seen: halfway between the
// two calibration points. Each row brings k experts; if about half of them
// were already read by the row before it, m rows read k (1 + (m - 1) / 2),
// and for Qwen3-30B-A3B's shape (k = 8 of 128) the midpoint at m = 4 is
// about 2.4 k, close to the 2.5 k published for verifying 4 tokens. Either
// end would be a worse prior: few_experts prices every draft as if it were
// one token repeated, distinct_experts is today's upper bound.
double seed_experts(const ExpertCalibration& calibration, int32_t rows);

class ExpertCosts {
public:
    // Each row count's estimate starts at seed_experts with the weight of
    // `prior_rounds` rounds; each observed round adds one, older ones decay
    // by `decay` a round of that row count.
    explicit ExpertCosts(ExpertCalibration calibration, double prior_rounds = 1.0, double decay = 0.9);

    int32_t max_rows() const { return static_cast<int32_t>(calibration_.few_cost.size()); }
    const ExpertCalibration& calibration() const { return calibration_; }

    // A decode round of `rows` rows read `experts` distinct experts a layer
    // on average (Backend::experts_touched). Rounds outside 1..max_rows and
    // non-positive counts are ignored.
    void observe(int32_t rows, double experts);

    // The running estimate of the distinct experts a layer a round of `rows`
    // rows reads (rows clamped to 1..max_rows).
    double expected_experts(int32_t rows) const;

    // cost(rows) / cost(1) under the current estimates, never falling as
    // rows grow; past max_rows the line through the last two.
    double relative(int32_t rows) const;

private:
    double priced(int32_t rows, double experts) const;
    void publish();  // under mutex_

    ExpertCalibration calibration_;
    double decay_;
    std::mutex mutex_;  // observe()'s running sums
    std::vector<double> sum_;
    std::vector<double> weight_;
    // Published for readers without the lock. A reader racing an observe()
    // may see one round's estimates half updated: a window one round off.
    std::unique_ptr<std::atomic<double>[]> expected_;
    std::unique_ptr<std::atomic<double>[]> relative_;
};

}  // namespace tf::engine
