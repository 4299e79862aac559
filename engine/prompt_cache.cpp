#include "engine/prompt_cache.h"

#include <algorithm>

namespace tf::engine {

namespace {

size_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

}  // namespace

PromptCache::Hit PromptCache::find(std::span<const TokenId> prompt) {
    Hit hit;
    if (prompt.size() < 2) return hit;
    const std::span<const TokenId> usable = prompt.first(prompt.size() - 1);
    Entry* best = nullptr;
    for (Entry& entry : entries_) {
        const auto length = static_cast<int32_t>(common_prefix(usable, entry.tokens));
        // Equal lengths: the most recently used entry, so hot entries stay hot.
        if (length > hit.length || (length == hit.length && length > 0 && best && entry.last_used > best->last_used)) {
            hit = {entry.stream, length};
            best = &entry;
        }
    }
    if (best) best->last_used = ++clock_;
    return hit;
}

std::vector<StreamId> PromptCache::adopt(StreamId stream, std::vector<TokenId> tokens) {
    std::vector<StreamId> to_close;
    const auto size = static_cast<int64_t>(tokens.size());
    if (size == 0 || size > max_tokens_) {
        to_close.push_back(stream);
        return to_close;
    }
    // An entry that the new one extends (its tokens are a prefix of the new
    // tokens) holds nothing the new one lacks; an entry that extends the new
    // one makes the new one redundant.
    for (const Entry& entry : entries_) {
        if (entry.tokens.size() >= tokens.size() && common_prefix(entry.tokens, tokens) == tokens.size()) {
            to_close.push_back(stream);
            return to_close;
        }
    }
    std::erase_if(entries_, [&](const Entry& entry) {
        if (common_prefix(entry.tokens, tokens) != entry.tokens.size()) return false;
        cached_tokens_ -= static_cast<int64_t>(entry.tokens.size());
        to_close.push_back(entry.stream);
        return true;
    });
    while (cached_tokens_ + size > max_tokens_ && !entries_.empty()) {
        auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                       [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
        cached_tokens_ -= static_cast<int64_t>(oldest->tokens.size());
        to_close.push_back(oldest->stream);
        entries_.erase(oldest);
    }
    cached_tokens_ += size;
    entries_.push_back({stream, std::move(tokens), ++clock_});
    return to_close;
}

std::vector<StreamId> PromptCache::clear() {
    std::vector<StreamId> streams;
    for (const Entry& entry : entries_) streams.push_back(entry.stream);
    entries_.clear();
    cached_tokens_ = 0;
    return streams;
}

}  // namespace tf::engine
