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
// Pure bookkeeping: it never calls the backend. The engine copies a hit's
// KV with Backend::copy_prefix and closes the streams this class evicts.
// Not thread-safe (owned by the engine's thread).
#pragma once

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

    struct Hit {
        StreamId source = -1;  // cached stream to copy from; -1: no hit
        int32_t length = 0;    // the resume point
    };

    // The longest prefix of `prompt` that a cached stream holds, at most
    // prompt.size() - 1 tokens: the last prompt token must run so that the
    // request gets its first logits. Marks the entry used.
    Hit find(std::span<const TokenId> prompt);

    // Takes a finished stream whose KV holds `tokens` (positions 0..n-1).
    // Returns the streams the engine must now close: evicted entries, entries
    // the new one covers, or `stream` itself when it is not worth keeping.
    std::vector<StreamId> adopt(StreamId stream, std::vector<TokenId> tokens);

    // Drops every entry; returns their streams for the engine to close.
    std::vector<StreamId> clear();

    int64_t cached_tokens() const { return cached_tokens_; }
    size_t entries() const { return entries_.size(); }

private:
    struct Entry {
        StreamId stream;
        std::vector<TokenId> tokens;
        uint64_t last_used;
    };

    int64_t max_tokens_;
    int64_t cached_tokens_ = 0;
    uint64_t clock_ = 0;
    std::vector<Entry> entries_;
};

}  // namespace tf::engine
