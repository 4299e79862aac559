// How long a draft should be: long enough to pay for its verification rows,
// judged by the cost curve the backend measured at start-up (docs/design.md,
// "Drafting").
//
// A round that verifies a k-token draft costs cost(1 + k) and yields the
// stream 1 + E[landed drafts] tokens. Under a per-token landing probability
// p (each drafted token lands given that the one before it did),
// E[landed] = p + p^2 + ... + p^k. The window is the k that maximizes
// tokens per unit of cost.
//
// Pure; thread-safe for concurrent reads once built.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/expert_costs.h"

namespace tf::engine {

// One measured point of a cost curve: a forward over `rows` rows took `cost`.
struct CostSample {
    int32_t rows = 0;
    double cost = 0;
};

// Costs of 1..max_rows rows (index m - 1) from a few samples: straight
// lines between samples, the first sample's cost below it, and past the last
// sample the line through the last two. Samples outside 1..max_rows or
// without a positive finite cost are ignored (none left: empty); of two
// samples of one row count the cheaper is kept; a sample cheaper than a
// smaller row count's is raised to it, so the costs never fall; and a sample
// dearer than running its rows as several forwards of a smaller sampled row
// count is lowered to that (timing noise under load).
std::vector<double> interpolate_costs(std::vector<CostSample> samples, int32_t max_rows);

class CostCurve {
public:
    // cost[m - 1] is the measured cost of a forward over m rows, for
    // m = 1..cost.size(); any positive unit. Costs are made non-decreasing.
    explicit CostCurve(std::vector<double> cost);

    // A flat curve (every M costs the same as M = 1): what a memory-bound
    // backend looks like in the limit; useful when nothing was measured.
    static CostCurve flat(int32_t max_rows);

    // A curve over 1..max_rows from a few measured row counts (start-up
    // calibration times only a handful): interpolate_costs' values, or flat
    // when no sample is usable.
    static CostCurve from_samples(std::vector<CostSample> samples, int32_t max_rows);

    // The same curve, priced for a mixture of experts by `experts`
    // (expert_costs.h): relative() then follows what the engine's rounds
    // read. Copies share `experts`, so what one thread's rounds observe
    // reaches every copy (the drafter's, the recall readers').
    CostCurve with_experts(std::shared_ptr<ExpertCosts> experts) const;

    int32_t max_rows() const { return static_cast<int32_t>(relative_.size()); }
    // cost(rows) / cost(1); rows past the measured range extrapolate linearly.
    // With experts: ExpertCosts::relative.
    double relative(int32_t rows) const;
    // Null for a dense model: where the engine's rounds report the experts
    // they read (RoundDriver).
    const std::shared_ptr<ExpertCosts>& experts() const { return experts_; }

private:
    std::vector<double> relative_;
    std::shared_ptr<ExpertCosts> experts_;
};

// Per-token landing probability estimated from what a source's drafts did
// lately: each round that drafted k and landed a contributes a successes
// and (a < k) one failure, with older rounds decayed. A prior of
// `prior_successes` / `prior_failures` keeps a fresh estimate sensible.
class LandingRate {
public:
    LandingRate(double prior_successes = 1.0, double prior_failures = 1.0, double decay = 0.9);
    void record(int32_t drafted, int32_t landed);
    double probability() const;  // in (0, 1)
    // Expected landed tokens of a k-token draft under the geometric model.
    double expected_landed(int32_t k) const;

private:
    double successes_;
    double failures_;
    double decay_;
};

// Expected tokens landed by a k-token draft with per-token probability p.
double expected_landed(double p, int32_t k);

// The draft length in [0, max_tokens] that maximizes
// (1 + expected_landed(p, k)) / cost(1 + k). Ties go to the shorter draft.
int32_t best_window(const CostCurve& curve, double p, int32_t max_tokens);

// The other streams' part of the round a draft joins: their decode rows;
// of those, the rows that were not record copies' drafts; and how many of
// them drafted no copy (their tokens come one round at a time, so a long
// round delays them most).
struct SharedRound {
    int32_t rows = 0;
    int32_t plain_rows = 0;
    int32_t plain_streams = 0;
};

// A draft's window in a round it shares. Its rows are priced at what they
// add to that round: the k that maximizes the stream's tokens per unit of
// the round's relative cost, (1 + expected_landed(p, k)) divided by
// cost(others.rows + 1 + k) / cost(others.rows + 1). Beside many rows,
// extra rows are a small part of the round. While some other stream drafts
// no copy, the round with this draft may also cost at most (1 + max_slowdown)
// times the round without any copy, cost(others.plain_rows + 1): copies
// share that allowance, so together they cannot make such a stream's token
// wait much longer. With no others this is best_window.
int32_t best_shared_window(const CostCurve& curve, double p, int32_t max_tokens, SharedRound others,
                           double max_slowdown);

}  // namespace tf::engine
