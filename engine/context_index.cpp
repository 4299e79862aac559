#include "engine/context_index.h"

#include <algorithm>
#include <cassert>

namespace tf::engine {

uint64_t ContextIndex::key_at(const std::vector<TokenId>& tokens, size_t last) {
    // kMinMatch ids of up to 21 bits each would pack exactly; vocabularies
    // are larger, so mix them instead (SplitMix64 finalizer per step).
    uint64_t key = 0x9E3779B97F4A7C15ull;
    for (size_t i = last + 1 - kMinMatch; i <= last; ++i) {
        key ^= static_cast<uint32_t>(tokens[i]);
        key *= 0xBF58476D1CE4E5B9ull;
        key ^= key >> 31;
    }
    return key;
}

void ContextIndex::append(std::span<const TokenId> tokens) {
    for (TokenId token : tokens) {
        tokens_.push_back(token);
        const size_t last = tokens_.size() - 1;
        if (last + 1 >= static_cast<size_t>(kMinMatch)) {
            occurrences_[key_at(tokens_, last)].push_back(static_cast<int32_t>(last));
        }
    }
}

ContextMatch ContextIndex::longest_match() const {
    ContextMatch best;
    const int32_t n = size();
    if (n < kMinMatch + 1) return best;
    auto found = occurrences_.find(key_at(tokens_, static_cast<size_t>(n - 1)));
    if (found == occurrences_.end()) return best;

    const std::vector<int32_t>& ends = found->second;
    int32_t examined = 0;
    // Most recent first; the tail's own occurrence (n - 1) is not a match.
    for (auto it = ends.rbegin(); it != ends.rend() && examined < kMaxCandidates; ++it) {
        const int32_t end = *it;
        if (end >= n - 1) continue;
        ++examined;
        int32_t length = 0;
        const int32_t limit = std::min(kMaxMeasured, end + 1);
        while (length < limit && tokens_[end - length] == tokens_[n - 1 - length]) ++length;
        if (length >= kMinMatch && length > best.length) best = {length, end};  // strictly longer: most recent wins ties
        if (best.length == kMaxMeasured) break;
    }
    return best;
}

std::vector<TokenId> ContextIndex::continuation(const ContextMatch& match, int32_t max_tokens) const {
    if (match.length == 0 || max_tokens <= 0) return {};
    // Past the newest token the copy overlaps itself, as an LZ77 copy does:
    // a tail that matched `period` tokens back (a run of one token, a line
    // drawn with a repeated pattern) goes on repeating that period, instead
    // of drafting at most `period` tokens a round.
    const int32_t begin = match.end + 1;
    const int32_t period = size() - begin;
    assert(period >= 1);  // longest_match never returns the tail itself
    std::vector<TokenId> out;
    out.reserve(static_cast<size_t>(max_tokens));
    for (int32_t i = 0; i < max_tokens; ++i) out.push_back(begin + i < size() ? tokens_[begin + i] : out[i - period]);
    return out;
}

}  // namespace tf::engine
