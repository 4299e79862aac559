// Deterministic sampling. DESIGN.md 4: "Sampling is counter-based: the
// random number at a position is a pure function of (request seed,
// position). A draft token lands iff it equals the token sampled there.
// Temperature 0 is argmax with lowest-id ties."
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
