#include "engine/expert_costs.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>

namespace tf::engine {

double seed_experts(const ExpertCalibration& calibration, int32_t rows) {
    const auto i = static_cast<size_t>(rows - 1);
    return calibration.few_experts[i] + 0.5 * (calibration.distinct_experts[i] - calibration.few_experts[i]);
}

ExpertCosts::ExpertCosts(ExpertCalibration calibration, double prior_rounds, double decay)
    : calibration_(std::move(calibration)), decay_(decay) {
    const size_t n = calibration_.few_cost.size();
    if (n == 0 || calibration_.few_experts.size() != n || calibration_.distinct_experts.size() != n) {
        throw std::invalid_argument("ExpertCosts: the calibration's vectors must be non-empty and of one length");
    }
    if (!(calibration_.few_cost[0] > 0)) throw std::invalid_argument("ExpertCosts: few_cost(1) must be positive");
    calibration_.seconds_per_expert = std::max(0.0, calibration_.seconds_per_expert);
    expected_ = std::make_unique<std::atomic<double>[]>(n);
    relative_ = std::make_unique<std::atomic<double>[]>(n);
    for (size_t i = 0; i < n; ++i) {
        weight_.push_back(prior_rounds);
        sum_.push_back(prior_rounds * seed_experts(calibration_, static_cast<int32_t>(i + 1)));
    }
    std::lock_guard lock(mutex_);
    publish();
}

double ExpertCosts::priced(int32_t rows, double experts) const {
    const auto i = static_cast<size_t>(rows - 1);
    return calibration_.few_cost[i] + calibration_.seconds_per_expert * (experts - calibration_.few_experts[i]);
}

void ExpertCosts::publish() {
    const size_t n = sum_.size();
    // Every row reads experts_per_token experts, so no round reads fewer
    // than one row does (few_experts(1)): a lower estimate is noise.
    const double floor = calibration_.few_experts[0];
    std::vector<double> expected(n);
    for (size_t i = 0; i < n; ++i) expected[i] = std::max(floor, sum_[i] / weight_[i]);
    const double one = priced(1, expected[0]);
    double previous = 1.0;
    for (size_t i = 0; i < n; ++i) {
        // Each row count learns alone, so a dear small round can price above
        // a cheap larger one; more rows never cost less, as in CostCurve.
        previous = std::max(previous, priced(static_cast<int32_t>(i + 1), expected[i]) / one);
        expected_[i].store(expected[i], std::memory_order_relaxed);
        relative_[i].store(previous, std::memory_order_relaxed);
    }
}

void ExpertCosts::observe(int32_t rows, double experts) {
    if (rows < 1 || rows > max_rows() || !(experts > 0)) return;
    const auto i = static_cast<size_t>(rows - 1);
    std::lock_guard lock(mutex_);
    sum_[i] = sum_[i] * decay_ + experts;
    weight_[i] = weight_[i] * decay_ + 1.0;
    publish();
}

double ExpertCosts::expected_experts(int32_t rows) const {
    rows = std::clamp(rows, 1, max_rows());
    return expected_[static_cast<size_t>(rows - 1)].load(std::memory_order_relaxed);
}

double ExpertCosts::relative(int32_t rows) const {
    assert(rows >= 1);
    const int32_t n = max_rows();
    auto at = [&](int32_t m) { return relative_[static_cast<size_t>(m - 1)].load(std::memory_order_relaxed); };
    if (rows <= n) return at(rows);
    const double slope = n >= 2 ? std::max(0.0, at(n) - at(n - 1)) : 0.0;
    return at(n) + slope * (rows - n);
}

}  // namespace tf::engine
