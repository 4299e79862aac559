#include "model/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace tf::model {

namespace {

uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Candidates whose probability is below e^-30 of the best one's carry under
// 1e-13 of the mass each; dropping them before sorting keeps top-p/top-k
// fast on large vocabularies without changing any realistic outcome.
constexpr float kNegligibleLogGap = 30.0f;

}  // namespace

double uniform_at(uint64_t seed, int64_t position) {
    const uint64_t bits = splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(position));
    return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

int32_t argmax(std::span<const float> logits) {
    // The definition: best = 0, then best = i wherever logits[i] > logits[best]
    // (lowest id on ties, a NaN never taken, a NaN at 0 kept). In two passes
    // that the compiler vectorizes: the largest value (8 independent lanes,
    // each keeping its value unless the new one is greater, as that
    // comparison does), then the first id that holds it. A verify round
    // samples every row over the whole vocabulary, and the one-pass loop,
    // a chain of dependent compares, was 6% of a round's time.
    const auto n = static_cast<int32_t>(logits.size());
    if (n <= 1 || std::isnan(logits[0])) return 0;
    constexpr int32_t kLanes = 8;
    float lanes[kLanes];
    for (float& lane : lanes) lane = logits[0];
    int32_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        for (int32_t k = 0; k < kLanes; ++k) lanes[k] = logits[i + k] > lanes[k] ? logits[i + k] : lanes[k];
    }
    float largest = logits[0];
    for (float lane : lanes) largest = lane > largest ? lane : largest;
    for (; i < n; ++i) largest = logits[i] > largest ? logits[i] : largest;
    for (int32_t j = 0; j < n; ++j) {
        if (logits[j] == largest) return j;  // -0 and +0 tie, as > has them
    }
    return 0;
}

int32_t sample(std::span<const float> logits, const SamplingParams& params, int64_t position) {
    const int32_t vocab = static_cast<int32_t>(logits.size());
    const int32_t best = argmax(logits);
    if (params.greedy() || vocab == 1) return best;

    const double inv_t = 1.0 / params.temperature;
    const float max_logit = logits[best];
    const bool truncates = params.truncates();

    // Candidates in a fixed order: by logit (descending), then id, when a cut
    // needs that order; plain id order otherwise. Every sum below runs in
    // this order, so the result is a pure function of logits and params.
    std::vector<int32_t> order;
    order.reserve(static_cast<size_t>(vocab));
    for (int32_t i = 0; i < vocab; ++i) {
        if (!truncates || (max_logit - logits[i]) * inv_t < kNegligibleLogGap) order.push_back(i);
    }
    auto by_logit = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    if (truncates) {
        if (params.top_k > 0 && params.top_k < static_cast<int32_t>(order.size())) {
            std::nth_element(order.begin(), order.begin() + params.top_k, order.end(), by_logit);
            order.resize(static_cast<size_t>(params.top_k));
        }
        std::sort(order.begin(), order.end(), by_logit);
    }

    std::vector<double> weights(order.size());
    double total = 0;
    for (size_t j = 0; j < order.size(); ++j) {
        weights[j] = std::exp((static_cast<double>(logits[order[j]]) - max_logit) * inv_t);
        total += weights[j];
    }
    // top_k (above), then top_p over what is left, then min_p.
    size_t kept = order.size();
    if (params.top_p < 1.0f) {
        double cumulative = 0;
        size_t needed = 0;
        while (needed < kept) {
            cumulative += weights[needed++];
            if (cumulative >= params.top_p * total) break;
        }
        kept = std::max<size_t>(needed, 1);
    }
    if (params.min_p > 0.0f) {
        // weights[0] is the most likely token's (sorted order).
        const double floor = params.min_p * weights[0];
        size_t above = 1;
        while (above < kept && weights[above] >= floor) ++above;
        kept = above;
    }
    double kept_total = 0;
    for (size_t j = 0; j < kept; ++j) kept_total += weights[j];

    const double target = uniform_at(params.seed, position) * kept_total;
    double cumulative = 0;
    for (size_t j = 0; j < kept; ++j) {
        cumulative += weights[j];
        if (target < cumulative) return order[j];
    }
    return order[kept - 1];
}

}  // namespace tf::model
