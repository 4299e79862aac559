// Verification: what a round lands for one stream. Row i's logits give the
// token at first_position + i; the draft token there lands iff it equals the
// token sampled there (DESIGN.md 4), and the first sampled token that differs
// (or the one after the whole draft) is the round's own token.
//
// Pure; thread-safe. The lane runs it right after the forward, so only the
// landed tokens travel back to the stream.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampler.h"
#include "model/backend.h"

namespace tf::engine {

struct Verdict {
    std::vector<model::TokenId> tokens;  // landed drafts, then the round's own token
    int32_t landed_drafts = 0;
};

// logits: (draft.size() + 1) rows of `vocab` floats.
Verdict verify(std::span<const float> logits, int32_t vocab, std::span<const model::TokenId> draft,
               const SamplingParams& sampling, int64_t first_position);

}  // namespace tf::engine
