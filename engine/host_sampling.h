// Sampling and log-probabilities on the host, for rows whose logits come
// back from the backend: rows of a constrained request (the mask removes
// tokens before sampling) and rows of a request that asked for logprobs.
// The pick is model::sample on the (masked) logits, the same function the
// backends' samplers are tested against, so a row's token does not depend
// on where it was sampled.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "engine/sampler.h"
#include "model/backend.h"

namespace tf::engine {

// The sampled token's log-probability and the most likely tokens at its
// position, under the model's distribution: the log-softmax of the raw
// logits (no temperature, no truncation, no mask), as vLLM reports them.
struct TokenLogprob {
    float logprob = 0;
    std::vector<std::pair<model::TokenId, float>> top;  // best first; equal logits: lower id first
};

// OpenAI allows 20 alternatives per position (chat top_logprobs).
inline constexpr int32_t kMaxTopLogprobs = 20;

// The token at `position` from `logits`, with every token outside `mask`
// (constraint.h's bit layout) removed; an empty mask removes nothing. A
// non-empty mask must allow at least one token. `scratch` avoids an
// allocation per row.
model::TokenId sample_row(std::span<const float> logits, std::span<const uint64_t> mask,
                          const SamplingParams& params, int64_t position, std::vector<float>& scratch);

// `token`'s log-probability and the `top` (at most kMaxTopLogprobs) most
// likely tokens.
TokenLogprob logprob_of(std::span<const float> logits, model::TokenId token, int32_t top);

}  // namespace tf::engine
