#include "cpu/moe_router.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace tf::cpu {

namespace {

// The k best of `score` over [0, n) into `out` (rank order, best first):
// k passes, each taking the highest not yet taken, the lower index on a tie
// (a strict comparison scanning upward). `taken` is n floats of scratch.
void top_k(const float* score, int32_t n, int32_t k, int32_t* out, float* taken) {
    std::fill(taken, taken + n, 0.0f);
    for (int32_t r = 0; r < k; ++r) {
        int32_t best = -1;
        for (int32_t e = 0; e < n; ++e) {
            if (taken[e] != 0.0f) continue;
            if (best < 0 || score[e] > score[best]) best = e;
        }
        taken[best] = 1.0f;
        out[r] = best;
    }
}

void sort_by_expert(std::span<ExpertChoice> chosen) {
    std::sort(chosen.begin(), chosen.end(), [](const ExpertChoice& a, const ExpertChoice& b) { return a.expert < b.expert; });
}

}  // namespace

void route_token(const model::MoeConfig& moe, const float* logits, const float* bias, std::span<ExpertChoice> chosen,
                 float* scratch) {
    const int32_t n = moe.num_experts, k = moe.experts_per_token;
    assert(static_cast<int32_t>(chosen.size()) == k && k <= n);
    float* score = scratch;
    float* taken = scratch + n;
    int32_t picked[256];
    assert(k <= 256);

    if (moe.router == model::RouterKind::softmax) {
        float max = -std::numeric_limits<float>::infinity();
        for (int32_t e = 0; e < n; ++e) max = std::max(max, logits[e]);
        float sum = 0.0f;
        for (int32_t e = 0; e < n; ++e) {
            score[e] = std::exp(logits[e] - max);
            sum += score[e];
        }
        for (int32_t e = 0; e < n; ++e) score[e] /= sum;
        top_k(score, n, k, picked, taken);
        float total = 0.0f;
        for (int32_t r = 0; r < k; ++r) total += score[picked[r]];
        for (int32_t r = 0; r < k; ++r) {
            chosen[r] = {picked[r], moe.norm_topk_prob ? score[picked[r]] / total : score[picked[r]]};
        }
        sort_by_expert(chosen);
        return;
    }

    // Sigmoid: choose on the biased scores inside the best groups, weigh
    // with the unbiased ones.
    const int32_t groups = moe.groups, per_group = n / groups;
    float sigmoid[1024];
    assert(n <= 1024);
    for (int32_t e = 0; e < n; ++e) {
        sigmoid[e] = 1.0f / (1.0f + std::exp(-logits[e]));
        score[e] = sigmoid[e] + (bias ? bias[e] : 0.0f);
    }
    if (groups > 1) {
        // A group's rank: the sum of its two best biased scores (its one
        // best when a group holds one expert).
        float group_score[256];
        int32_t best_groups[256];
        assert(groups <= 256);
        for (int32_t g = 0; g < groups; ++g) {
            int32_t two[2];
            const int32_t m = std::min(2, per_group);
            top_k(score + g * per_group, per_group, m, two, taken);
            group_score[g] = score[g * per_group + two[0]] + (m > 1 ? score[g * per_group + two[1]] : 0.0f);
        }
        top_k(group_score, groups, moe.top_groups, best_groups, taken);
        // Experts of the other groups drop to a score of zero, as the
        // published router masks them (not to minus infinity).
        float keep[256] = {};
        for (int32_t r = 0; r < moe.top_groups; ++r) keep[best_groups[r]] = 1.0f;
        for (int32_t e = 0; e < n; ++e) {
            if (keep[e / per_group] == 0.0f) score[e] = 0.0f;
        }
    }
    top_k(score, n, k, picked, taken);
    float total = 0.0f;
    for (int32_t r = 0; r < k; ++r) total += sigmoid[picked[r]];
    for (int32_t r = 0; r < k; ++r) {
        float w = sigmoid[picked[r]];
        if (moe.norm_topk_prob) w /= total + 1e-20f;
        chosen[r] = {picked[r], w * moe.routed_scaling_factor};
    }
    sort_by_expert(chosen);
}

}  // namespace tf::cpu
