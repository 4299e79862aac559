// ContextIndex: the copy window's own-context source. It finds the longest
// earlier occurrence of a stream's last tokens in that stream's own prompt
// and reply, and offers what followed it as a draft.
//
// The copy window consults this index before the record, and on equal
// expectations the own-context draft is kept (docs/recall.md, "Offer policy").
//
// One per stream; not thread-safe (a stream is driven by one thread).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace tf::engine {

using TokenId = int32_t;

struct ContextMatch {
    int32_t length = 0;    // tokens of the tail that matched; 0: no match
    int32_t end = -1;      // index of the last matched token of the earlier occurrence
};

class ContextIndex {
public:
    // A match needs at least this many tokens: shorter ones land too rarely
    // to pay for their rows.
    static constexpr int32_t kMinMatch = 3;
    // Candidates examined per lookup (most recent first) and the longest
    // match measured: bounds a lookup's cost on long, repetitive contexts.
    static constexpr int32_t kMaxCandidates = 64;
    static constexpr int32_t kMaxMeasured = 256;

    // Appends landed tokens (prompt or reply) and indexes them.
    void append(std::span<const TokenId> tokens);
    void append(TokenId token) { append(std::span<const TokenId>(&token, 1)); }

    const std::vector<TokenId>& tokens() const { return tokens_; }
    int32_t size() const { return static_cast<int32_t>(tokens_.size()); }

    // The longest earlier occurrence of the current tail (ending before the
    // last token), most recent on ties. length 0 when there is none of at
    // least kMinMatch tokens.
    ContextMatch longest_match() const;

    // `max_tokens` tokens that followed `match` (the draft); where they
    // reach the newest token they go on with the same period, the match's
    // distance back (a run of one token drafts that token again and again).
    std::vector<TokenId> continuation(const ContextMatch& match, int32_t max_tokens) const;

private:
    static uint64_t key_at(const std::vector<TokenId>& tokens, size_t last);

    std::vector<TokenId> tokens_;
    // key of kMinMatch tokens → indices of their last token, oldest first.
    std::unordered_map<uint64_t, std::vector<int32_t>> occurrences_;
};

}  // namespace tf::engine
