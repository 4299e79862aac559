#include "engine/host_sampling.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/constraint.h"

namespace tf::engine {

model::TokenId sample_row(std::span<const float> logits, std::span<const uint64_t> mask,
                          const SamplingParams& params, int64_t position, std::vector<float>& scratch) {
    if (mask.empty()) return model::sample(logits, params, position);
    // A removed token gets -inf: model::sample gives it no weight and never
    // counts it among the candidates near the best.
    scratch.assign(logits.begin(), logits.end());
    bool any = false;
    for (size_t id = 0; id < scratch.size(); ++id) {
        if (mask_allows(mask, static_cast<model::TokenId>(id))) {
            any = true;
        } else {
            scratch[id] = -std::numeric_limits<float>::infinity();
        }
    }
    assert(any && "a constrained row's mask allows no token");
    (void)any;
    return model::sample(scratch, params, position);
}

TokenLogprob logprob_of(std::span<const float> logits, model::TokenId token, int32_t top) {
    assert(token >= 0 && static_cast<size_t>(token) < logits.size());
    const float max_logit = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float logit : logits) sum += std::exp(static_cast<double>(logit) - max_logit);
    const double log_total = max_logit + std::log(sum);
    auto logprob = [&](model::TokenId id) { return static_cast<float>(logits[static_cast<size_t>(id)] - log_total); };

    TokenLogprob out;
    out.logprob = logprob(token);
    const auto count = static_cast<size_t>(std::clamp(top, 0, kMaxTopLogprobs));
    if (count == 0) return out;
    std::vector<model::TokenId> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    const size_t kept = std::min(count, ids.size());
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(kept), ids.end(),
                      [&](model::TokenId a, model::TokenId b) {
                          const float la = logits[static_cast<size_t>(a)];
                          const float lb = logits[static_cast<size_t>(b)];
                          return la > lb || (la == lb && a < b);
                      });
    for (size_t i = 0; i < kept; ++i) out.top.emplace_back(ids[i], logprob(ids[i]));
    return out;
}

}  // namespace tf::engine
