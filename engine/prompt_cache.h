// PromptCache: the KV of recent requests (prompt and reply), kept in backend
// streams that finished, so a later request that starts the same way skips
// reading that part again. The longest cached prefix of a new prompt is its
// *resume point*.
//
// This is separate from Recall: the cache saves model state so a repeated
// prompt prefix need not be read again, whereas the record only holds ids.
// The two meet at one point: a request's contribution to the record begins at
// the resume point reported here (docs/recall.md, introduction and "On disk",
// what gets added).
//
// The class is pure bookkeeping: it never calls the backend. The two
// functions at the end are the glue both engines (engine/engine.cpp and the
// gpu_lane actor) use: they copy a hit's KV with Backend::copy_prefix and
// close the streams this class evicts.
//
// A model with recurrent layers (NemotronH) holds its state at a few
// lengths of a stream only, never at every prefix, so its entries carry the
// lengths they can resume at: the end of the prompt less its last token
// (where the same prompt, regenerated, resumes) and the whole entry.
// Not thread-safe (owned by the engine's thread).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "model/backend.h"

namespace tf::engine {

using model::StreamId;
using model::TokenId;

class PromptCache {
public:
    // `max_tokens`: the most KV positions held by cached streams together.
    explicit PromptCache(int64_t max_tokens) : max_tokens_(max_tokens) {}

    // The token budget a budget of `bytes` buys at `bytes_per_token` of KV
    // (a smaller KV type keeps more tokens), never under one whole context
    // (a conversation as long as the context must resume) and never over
    // `most_tokens`; `fallback` when the KV size is not known (0).
    static int64_t tokens_for_bytes(uint64_t bytes, uint64_t bytes_per_token, int64_t context, int64_t most_tokens,
                                    int64_t fallback) {
        if (bytes_per_token == 0) return fallback;
        const auto fit = static_cast<int64_t>(std::min<uint64_t>(bytes / bytes_per_token, static_cast<uint64_t>(most_tokens)));
        return std::max(context, fit);
    }

    struct Hit {
        StreamId source = -1;  // cached stream to copy from; -1: no hit
        int32_t length = 0;    // the resume point
        int32_t entry_tokens = 0;  // all the source holds
    };

    // The longest prefix of `prompt` that a cached stream holds, at most
    // prompt.size() - 1 tokens: the last prompt token must run so that the
    // request gets its first logits. Marks the entry used.
    Hit find(std::span<const TokenId> prompt);

    // Takes a finished stream whose KV holds `tokens` (positions 0..n-1).
    // `resume_points`: the only lengths a hit may resume at, in any order;
    // empty = every prefix. `state_tokens`: what the entry's recurrent
    // state costs, in tokens' worth of KV, charged to the budget beside its
    // tokens. Returns the streams the engine must now close: evicted
    // entries, entries the new one covers, or `stream` itself when it is
    // not worth keeping.
    std::vector<StreamId> adopt(StreamId stream, std::vector<TokenId> tokens, std::vector<int32_t> resume_points = {},
                                int64_t state_tokens = 0);

    // Forgets the entry of `stream` (its KV went to a running request);
    // false when there is none. The caller closes the stream.
    bool release(StreamId stream);

    // Drops every entry; returns their streams for the engine to close.
    std::vector<StreamId> clear();

    int64_t cached_tokens() const { return cached_tokens_; }  // state_tokens included
    size_t entries() const { return entries_.size(); }

private:
    struct Entry {
        StreamId stream;
        std::vector<TokenId> tokens;
        uint64_t last_used;
        std::vector<int32_t> resume_points;  // empty: every prefix
        int64_t cost;                        // tokens, plus the recurrent state's worth
    };

    int64_t max_tokens_;
    int64_t cached_tokens_ = 0;
    uint64_t clock_ = 0;
    std::vector<Entry> entries_;
};

// What one cached stream's recurrent state (cpu/recurrent_state.h) costs
// in positions of KV; 0 without Mamba layers.
int64_t state_cost_tokens(const model::ModelConfig& config);

// A stream that is running (prefill or decode) and whose first positions
// another request may copy: between rounds its KV holds exactly the first
// backend.stream_length(kv) of `tokens` (its prompt, or prompt and reply),
// and those positions do not change while it runs.
struct RunningStream {
    StreamId kv = -1;
    std::span<const TokenId> tokens;
};

// A new stream `kv` (open, empty) for `prompt`: puts the longest prefix the
// cache or a running stream holds into it and, on a recurrent model, asks
// the backend to keep the state at the prompt's end for this stream's own
// entry later. Returns the resume point.
//
// A cache entry's prefix moves instead of being copied (Backend::move_prefix)
// when the request resumes at least half of the entry (a regenerated prompt,
// the next turn of a conversation): the entry leaves the cache, and the
// request's own stream takes its place when it retires. Until then a request
// that starts the same way (n choices, a burst of regenerates) copies the
// prefix from that running stream, passed in `running`.
int32_t resume_from_cache(model::Backend& backend, PromptCache& cache, StreamId kv, std::span<const TokenId> prompt,
                          std::span<const RunningStream> running = {});

// A finished stream `kv` whose first tokens.size() positions are worth
// keeping: cuts the rest, hands it to the cache, and closes what the cache
// lets go (the stream itself when the backend no longer holds its state at
// that length).
void retire_to_cache(model::Backend& backend, PromptCache& cache, StreamId kv, std::vector<TokenId> tokens,
                     int32_t prompt_length);

}  // namespace tf::engine
