// Verification: what a round lands for one stream. Row i samples the token
// at first_position + i (the backend samples it where the logits are); the
// draft token there lands iff it equals that sampled token (docs/design.md,
// section 4), and the first sampled token that differs (or the one after
// the whole draft) is the round's own token.
//
// RoundDriver judges each stream's rows right after the forward, so only the
// landed tokens travel back to a stream that lives elsewhere (docs/design.md,
// section 3, step 5).
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/host_sampling.h"
#include "engine/sampler.h"
#include "model/backend.h"

namespace tf::engine {

using model::StreamId;
using model::TokenId;

// What one stream puts into a round.
struct StreamRows {
    StreamId kv = 0;
    std::vector<model::Row> rows;  // a prompt chunk, or the pending token then the draft; sampler 0 is `sampling`
    std::vector<TokenId> draft;    // decode rounds: the tokens of rows[1..]
    SamplingParams sampling;
    int64_t first_position = 0;    // the position of the first token sampled
    bool samples = false;          // false: a prompt chunk short of the prompt's end
    bool prefill = false;
    // A constrained stream's masks (constraint.h), mask_words words per
    // sampling row, in row order; empty: unconstrained.
    std::vector<uint64_t> masks;
    int32_t mask_words = 0;
    int32_t logprobs = -1;  // >= 0: the landed tokens' logprobs with this many alternatives
    bool record_copy = false;  // the draft is a copy from the record

    int32_t sampled_rows() const;  // rows that sample a token
    // Sampled on the host from returned logits (host_sampling.h).
    bool host_sampled() const { return !masks.empty() || logprobs >= 0; }
};

struct Verdict {
    std::vector<TokenId> tokens;  // landed drafts, then the round's own token
    int32_t landed_drafts = 0;
    std::vector<TokenLogprob> logprobs;  // one per token when the rows asked (StreamRows::logprobs)
    // The whole round this verdict came from, every stream's part together
    // (prompt chunks left out): its decode rows, how many of them were
    // record copies' drafts, and the decode parts that drafted no copy.
    int32_t round_rows = 0;
    int32_t round_copy_rows = 0;
    int32_t round_plain_parts = 0;
};

// sampled: the tokens sampled after the pending token and each draft token
// (draft.size() + 1 of them).
Verdict verify(std::span<const TokenId> sampled, std::span<const TokenId> draft);

// The verdict for a stream's rows, from the tokens its rows sampled
// (sampled_rows() of them).
Verdict judge(const StreamRows& rows, std::span<const TokenId> sampled);

// The rows of a round take their samplers from the round's list: sets each
// sampling row's sampler to `index` (the part's place in that list).
void use_sampler(StreamRows& rows, int32_t index);

// The KV length the stream keeps after the verdict: the prompt chunk, or the
// pending token and the drafts that landed; rejected drafts leave the cache.
int32_t kv_after(const StreamRows& rows, const Verdict& verdict);

}  // namespace tf::engine
