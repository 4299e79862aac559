#include "engine/draft_window.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <stdexcept>

namespace tf::engine {

CostCurve::CostCurve(std::vector<double> cost) {
    if (cost.empty() || !(cost[0] > 0)) throw std::invalid_argument("CostCurve: cost(1) must be positive");
    relative_.reserve(cost.size());
    double previous = 1.0;
    for (double c : cost) {
        // Timing noise can make cost(m+1) < cost(m); verifying more rows
        // never costs less, so keep the curve monotone.
        previous = std::max(previous, c / cost[0]);
        relative_.push_back(previous);
    }
}

CostCurve CostCurve::flat(int32_t max_rows) { return CostCurve(std::vector<double>(std::max(1, max_rows), 1.0)); }

std::vector<double> interpolate_costs(std::vector<CostSample> samples, int32_t max_rows) {
    max_rows = std::max(1, max_rows);
    std::erase_if(samples, [&](const CostSample& s) {
        return s.rows < 1 || s.rows > max_rows || !std::isfinite(s.cost) || !(s.cost > 0);
    });
    if (samples.empty()) return {};
    std::sort(samples.begin(), samples.end(), [](const CostSample& a, const CostSample& b) {
        return a.rows != b.rows ? a.rows < b.rows : a.cost < b.cost;
    });
    // Equal row counts sort cheapest first: keep that one (best of the timings).
    samples.erase(std::unique(samples.begin(), samples.end(),
                              [](const CostSample& a, const CostSample& b) { return a.rows == b.rows; }),
                  samples.end());
    // Monotone before interpolating, so that the slope past the last sample
    // is never negative.
    for (size_t i = 1; i < samples.size(); ++i) samples[i].cost = std::max(samples[i].cost, samples[i - 1].cost);
    // A forward of m rows never needs more than ceil(m / a) forwards of a
    // rows would take: the rows could run that way. A timing above that
    // bound is the machine's noise (a forward preempted while it was timed;
    // long forwards are preempted more often than short ones on a busy
    // machine, which steepens the curve and shortens every window), so cap it.
    // The caps keep the costs non-decreasing.
    for (size_t i = 1; i < samples.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
            const int32_t pieces = (samples[i].rows + samples[j].rows - 1) / samples[j].rows;
            samples[i].cost = std::min(samples[i].cost, pieces * samples[j].cost);
        }
    }

    std::vector<double> cost(static_cast<size_t>(max_rows));
    size_t upper = 0;  // first sample with rows >= m
    for (int32_t m = 1; m <= max_rows; ++m) {
        while (upper < samples.size() && samples[upper].rows < m) ++upper;
        double c = samples.front().cost;  // below the first sample, or only one sample
        if (upper > 0 && upper < samples.size()) {
            const CostSample& a = samples[upper - 1];
            const CostSample& b = samples[upper];
            c = a.cost + (b.cost - a.cost) * (m - a.rows) / (b.rows - a.rows);
        } else if (upper > 0 && samples.size() >= 2) {
            const CostSample& a = samples[samples.size() - 2];
            const CostSample& b = samples.back();
            c = b.cost + (b.cost - a.cost) * (m - b.rows) / (b.rows - a.rows);
        }
        cost[static_cast<size_t>(m - 1)] = c;
    }
    return cost;
}

CostCurve CostCurve::from_samples(std::vector<CostSample> samples, int32_t max_rows) {
    std::vector<double> cost = interpolate_costs(std::move(samples), max_rows);
    return cost.empty() ? flat(max_rows) : CostCurve(std::move(cost));
}

CostCurve CostCurve::with_experts(std::shared_ptr<ExpertCosts> experts) const {
    CostCurve curve = *this;
    curve.experts_ = std::move(experts);
    return curve;
}

double CostCurve::relative(int32_t rows) const {
    assert(rows >= 1);
    if (experts_) return experts_->relative(rows);
    const int32_t n = max_rows();
    if (rows <= n) return relative_[rows - 1];
    const double slope = n >= 2 ? relative_[n - 1] - relative_[n - 2] : 0.0;
    return relative_[n - 1] + slope * (rows - n);
}

LandingRate::LandingRate(double prior_successes, double prior_failures, double decay)
    : successes_(prior_successes), failures_(prior_failures), decay_(decay) {}

void LandingRate::record(int32_t drafted, int32_t landed) {
    if (drafted <= 0) return;
    successes_ = successes_ * decay_ + landed;
    failures_ = failures_ * decay_ + (landed < drafted ? 1.0 : 0.0);
}

double LandingRate::probability() const {
    const double p = successes_ / (successes_ + failures_);
    return std::clamp(p, 1e-6, 1.0 - 1e-6);
}

double LandingRate::expected_landed(int32_t k) const { return tf::engine::expected_landed(probability(), k); }

double expected_landed(double p, int32_t k) {
    double sum = 0, term = 1;
    for (int32_t i = 0; i < k; ++i) {
        term *= p;
        sum += term;
    }
    return sum;
}

int32_t best_window(const CostCurve& curve, double p, int32_t max_tokens) {
    return best_shared_window(curve, p, max_tokens, SharedRound{}, 0.0);
}

int32_t best_shared_window(const CostCurve& curve, double p, int32_t max_tokens, SharedRound others,
                           double max_slowdown) {
    const int32_t base_rows = std::max(0, others.rows) + 1;
    const double base_cost = curve.relative(base_rows);
    const double cost_limit =
        others.plain_streams > 0 ? curve.relative(std::max(0, others.plain_rows) + 1) * (1.0 + max_slowdown) : HUGE_VAL;
    int32_t best = 0;
    double best_rate = 1.0 / base_cost;
    double landed = 0, term = 1;
    for (int32_t k = 1; k <= max_tokens; ++k) {
        const double cost = curve.relative(base_rows + k);
        if (cost > cost_limit) break;  // the curve never falls: longer is dearer still
        term *= p;
        landed += term;
        const double rate = (1.0 + landed) / cost;
        if (rate > best_rate) {
            best_rate = rate;
            best = k;
        }
    }
    return best;
}

}  // namespace tf::engine
