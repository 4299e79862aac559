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

}  // namespace

double counter_uniform(uint64_t seed, int64_t position) {
    const uint64_t mixed = splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(position));
    return static_cast<double>(mixed >> 11) * 0x1.0p-53;
}

int32_t argmax_token(std::span<const float> logits) {
    int32_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i) {
        if (logits[i] > logits[best] || std::isnan(logits[best])) best = static_cast<int32_t>(i);
    }
    return best;
}

int32_t sample_token(std::span<const float> logits, const SamplingParams& params, int64_t position) {
    if (params.temperature <= 0.0 || logits.empty()) return argmax_token(logits);
    const int32_t best = argmax_token(logits);
    const double max_logit = logits[best];
    std::vector<double> weight(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) {
        weight[i] = std::isnan(logits[i]) ? 0.0 : std::exp((logits[i] - max_logit) / params.temperature);
    }
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return weight[a] != weight[b] ? weight[a] > weight[b] : a < b;
    });
    double total = 0.0;
    for (int32_t id : order) total += weight[id];
    // Nucleus: the shortest prefix of `order` holding top_p of the mass.
    size_t kept = order.size();
    if (params.top_p < 1.0) {
        double mass = 0.0;
        for (size_t i = 0; i < order.size(); ++i) {
            mass += weight[order[i]];
            if (mass >= params.top_p * total) {
                kept = i + 1;
                break;
            }
        }
    }
    double kept_total = 0.0;
    for (size_t i = 0; i < kept; ++i) kept_total += weight[order[i]];
    const double target = counter_uniform(params.seed, position) * kept_total;
    double cumulative = 0.0;
    for (size_t i = 0; i < kept; ++i) {
        cumulative += weight[order[i]];
        if (target < cumulative) return order[i];
    }
    return order[kept - 1];  // rounding left target at the very top
}

}  // namespace tf::model
