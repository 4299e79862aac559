// Measuring the backend's cost curve cost(M) at start-up, so the copy window
// knows what verifying M rows costs on this machine (DESIGN.md 6).
//
// Start-up must stay short whatever the model: a few row counts are timed,
// not every M, under a wall-clock budget, and the curve is drawn through
// them (CostCurve::from_samples). Row counts are timed in plan order
// (default_sample_rows: coarse first, then the points between), each once,
// before any is timed again; a forward runs only if its predicted cost fits
// what is left of the budget. So a slow model gives up repeats first, then
// the fine points, and keeps a curve whose points are far apart.
//
// Runs forwards on a scratch stream; call before serving, on the thread that
// owns the backend.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/draft_window.h"
#include "engine/expert_costs.h"
#include "model/backend.h"

namespace tf::engine {

struct CalibrationOptions {
    int32_t max_rows = 64;  // the curve covers 1..max_rows
    // Row counts in the order they are timed; empty: default_sample_rows.
    std::vector<int32_t> sample_rows;
    // Positions in the cache before the timed rows, written by one warm-up
    // forward (its last row wants logits, so it reads every weight once).
    // The first forward after loading pays for page faults and waking
    // threads: that is loading, so it is neither timed nor charged to the
    // budget. A few positions do: attention over a short prefix is a small
    // part of a forward, and a longer warm-up would be compute at start-up.
    int32_t context = 4;
    int32_t repeats = 3;          // most timings of one row count (the best is kept)
    double budget_seconds = 1.0;  // wall clock for the timed forwards
    // Seconds on a monotonic clock; empty: std::chrono::steady_clock. Tests
    // pass a fake clock that their fake backend advances.
    std::function<double()> clock;
    model::StreamId scratch = -1;  // must not be open
};

// A mixture of experts' row count, timed with distinct ids and, when the
// budget allowed, with one id repeated at consecutive positions; what
// Backend::experts_touched() said after each, and their best timings.
struct ExpertSample {
    int32_t rows = 0;
    double distinct_experts = 0;
    double repeated_experts = 0;  // when repeated_timed
    bool repeated_timed = false;
    double distinct_seconds = 0;
    double repeated_seconds = 0;  // when repeated_timed
};

struct Calibration {
    CostCurve curve = CostCurve::flat(1);
    std::vector<CostSample> measured;  // best time of each timed row count, ascending rows
    std::vector<int32_t> untimed;      // planned row counts the budget left out, ascending
    int32_t forwards = 0;              // timed forwards (the warm-up not counted)
    double warmup_seconds = 0;
    double seconds = 0;         // all of it, warm-up included (the options' clock)
    bool budget_spent = false;  // some planned forward did not run: a row count, a repeated-id timing or a repeat
    // A mixture of experts only (config().moe): each timed row count's
    // experts, ascending rows; the row counts the budget timed with distinct
    // ids alone; and the cost of one more distinct expert a layer (0 when no
    // repeated-id round read fewer experts than its distinct-id one). Then
    // `curve` prices rounds by their experts (CostCurve::experts()).
    std::vector<ExpertSample> experts;
    std::vector<int32_t> repeated_untimed;
    double seconds_per_expert = 0;
    // For the serve startup line, e.g. "M = 1, 2, 4, 16 timed in 6 forwards,
    // 35 ms warm-up; over budget: M = 8, 32", and for a mixture "; M = 16:
    // 9.5 experts a layer with repeated ids, 82 with distinct ids, 0.21 ms an
    // expert" (M = 16 if it was timed both ways, else the largest that was).
    std::string summary() const;
};

// The order row counts are timed in: 1, 4, 16, ... (times four) and
// max_rows, then the powers of two between them, smallest first (2, 8, 32).
// cost(M) bends at small M, from reading each weight once per forward to
// computing with it M times, and is close to a line past that: points at
// 1 and 4 catch the bend, and when the budget stops the plan after the
// coarse points, the line through two points far apart (say 4 and 16)
// extrapolates much better than one through 2 and 4, whose difference is
// within timing noise. With time to spare the fine points follow. Rows timed
// add up to under 3 * max_rows, forwards to about log2(max_rows) + 1.
std::vector<int32_t> default_sample_rows(int32_t max_rows);

// The warm-up and the first two row counts of the plan always run, even past
// the budget: a curve needs a slope, and a flat one would make every draft
// look free. That floor is a few passes over the weights, like loading them.
//
// A mixture of experts times each row count M > 1 twice, one after the
// other: distinct ids, then one id repeated (M = 1 reads one token's experts
// either way). The repeated-id timing runs when the distinct one's cost
// still fits the budget, and always for the first M > 1 timed, which gives
// the slope per expert. Where the budget skipped it, the few-experts cost of
// that M is the distinct timing less the slope times the experts the
// repeated ids would have spared (their count interpolated from the row
// counts timed both ways): the model stands in for the missing forward.
Calibration measure_cost_curve(model::Backend& backend, const CalibrationOptions& options = {});

// The pricing measure_cost_curve draws from a mixture's samples (ascending
// rows), over 1..max_rows: the slope is the cost the distinct ids added over
// the experts they added, summed over the row counts timed both ways where
// the repeated id read fewer (a ratio of sums weighs the large differences,
// the least noisy, most); few_cost and the expert counts are drawn like a
// cost curve (interpolate_costs), the counts at most num_experts. Empty when
// no sample has a positive time and expert count.
std::optional<ExpertCalibration> expert_calibration(const std::vector<ExpertSample>& samples, int32_t max_rows,
                                                    int32_t num_experts);

}  // namespace tf::engine
