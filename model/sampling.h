// Deterministic sampling (docs/design.md, section 4), the reference every
// backend's sampler keeps. The uniform number a position draws comes from a
// counter-based generator keyed only by the request's seed and that
// position; at temperature 0 the pick is the highest logit, the smallest id
// among equals.
//
// Because the logits at a position are bitwise the same however the row was
// batched, and the random number depends only on (seed, position), the token
// sampled at a position is the same with or without drafts: that is what
// makes replies identical with Recall on, off or read-only. The engine lands
// a drafted token exactly when it equals the token sampled at its position.
//
// The definition, for a device that samples on its own: greedy is argmax
// with the lowest id on ties. Without top_k, top_p or min_p every token is a
// candidate, in id order; with any of them the candidates are the tokens
// whose logit is within 30 * temperature of the best, ordered by logit
// (descending) then id. Weights are
// exp((logit - best) / temperature) in double; top_k keeps the first k,
// top_p then the shortest prefix whose weight reaches top_p of the total,
// min_p then the prefix whose weights are at least min_p times the first's.
// The token is the first whose running sum of kept weights exceeds
// uniform_at(seed, position) times their total.
//
// A device sampler that follows this definition (gpu/kernels/sampler.cuh)
// is equal to this code except in two roundings: its exp may differ from
// the host's by an ulp, and it adds the weights in a fixed tree rather than
// left to right. Either moves a running sum by about an ulp, which changes
// a pick only when u * total falls that close to a boundary between two
// tokens. Greedy picks use neither and are always equal; the CUDA test
// (tests/gpu/oracle_sampler_test.cpp) counts the sampled picks that differ
// and allows at most 1 in 100.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>

namespace tf::model {

struct SamplingParams {
    float temperature = 1.0f;  // <= 0: greedy
    int32_t top_k = 0;         // 0: no limit
    float top_p = 1.0f;        // 1: no nucleus cut
    float min_p = 0.0f;        // 0: no floor
    uint64_t seed = 0;

    bool greedy() const { return temperature <= 0.0f; }
    bool truncates() const { return top_k > 0 || top_p < 1.0f || min_p > 0.0f; }
};

// A uniform number in [0, 1) that depends only on (seed, position).
double uniform_at(uint64_t seed, int64_t position);

// The index of the largest logit, lowest index on ties.
int32_t argmax(std::span<const float> logits);

// The token at `position` (its index in prompt + reply) given the logits of
// the row before it.
int32_t sample(std::span<const float> logits, const SamplingParams& params, int64_t position);

}  // namespace tf::model
