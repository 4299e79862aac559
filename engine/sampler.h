// Deterministic sampling (docs/design.md, section 4). The uniform number a
// position draws comes from a counter-based generator keyed only by the
// request's seed and that position; a drafted token is accepted exactly when
// it is the token drawn at its position; at temperature 0 the pick is the
// highest logit, the smallest id among equals.
//
// Because the logits at a position are bitwise the same however the row was
// batched, and the random number depends only on (seed, position), the token
// sampled at a position is the same with or without drafts: that is what
// makes replies identical with Recall on, off or read-only.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>

namespace tf::engine {

struct SamplingParams {
    float temperature = 1.0f;  // <= 0: greedy
    int32_t top_k = 0;         // 0: no limit
    float top_p = 1.0f;        // 1: no nucleus cut
    float min_p = 0.0f;        // 0: no floor
    uint64_t seed = 0;

    bool greedy() const { return temperature <= 0.0f; }
};

// A uniform number in [0, 1) that depends only on (seed, position).
double uniform_at(uint64_t seed, int64_t position);

// The index of the largest logit, lowest index on ties.
int32_t argmax(std::span<const float> logits);

// The token at `position` (its index in prompt + reply) given the logits of
// the row before it.
int32_t sample(std::span<const float> logits, const SamplingParams& params, int64_t position);

}  // namespace tf::engine
