// Token choice from one row's logits, as pure functions. Counter-based: the
// random number used at a position is a function of (seed, position) alone,
// so the token sampled there is the same whether it was drafted and verified
// or decoded one at a time, and whatever else the server runs (DESIGN.md
// section 4: "A draft token lands iff it equals the token sampled there").
//
// Thread-safety: pure; call from any thread.
#pragma once

#include <cstdint>
#include <span>

namespace tf::model {

struct SamplingParams {
    double temperature = 0.0;  // <= 0: greedy
    double top_p = 1.0;        // nucleus: keep the most likely ids whose probability sums to top_p
    uint64_t seed = 0;
};

// The random number at (seed, position): uniform in [0, 1), 53 bits, from
// SplitMix64 over the pair.
double counter_uniform(uint64_t seed, int64_t position);

// The id of the largest logit; the lowest id on ties. NaN never wins.
int32_t argmax_token(std::span<const float> logits);

// The token at `position` (the position the token will occupy in the
// stream): argmax when temperature <= 0, else softmax(logits / temperature)
// cut to top_p, sampled with counter_uniform(seed, position). Ids are
// ordered by probability, then by id, so ties never depend on memory order.
int32_t sample_token(std::span<const float> logits, const SamplingParams& params, int64_t position);

}  // namespace tf::model
