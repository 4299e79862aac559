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
        auto length = static_cast<int32_t>(common_prefix(usable, entry.tokens));
        if (!entry.resume_points.empty()) {
            int32_t best_point = 0;
            for (int32_t point : entry.resume_points) {
                if (point <= length) best_point = std::max(best_point, point);
            }
            length = best_point;
        }
        // Equal lengths: the most recently used entry, so hot entries stay hot.
        if (length > hit.length || (length == hit.length && length > 0 && best && entry.last_used > best->last_used)) {
            hit = {entry.stream, length, static_cast<int32_t>(entry.tokens.size())};
            best = &entry;
        }
    }
    if (best) best->last_used = ++clock_;
    return hit;
}

std::vector<StreamId> PromptCache::adopt(StreamId stream, std::vector<TokenId> tokens,
                                         std::vector<int32_t> resume_points, int64_t state_tokens) {
    std::vector<StreamId> to_close;
    const auto size = static_cast<int64_t>(tokens.size()) + state_tokens;
    if (size == 0 || size > max_tokens_) {
        to_close.push_back(stream);
        return to_close;
    }
    // An entry that the new one extends (its tokens are a prefix of the new
    // tokens) holds nothing the new one lacks; an entry that extends the new
    // one makes the new one redundant. With resume points, only when the
    // longer one can resume everywhere the shorter one can.
    auto covers = [](const Entry& longer, const std::vector<int32_t>& points) {
        if (longer.resume_points.empty()) return true;
        if (points.empty()) return false;
        return std::all_of(points.begin(), points.end(), [&](int32_t p) {
            return std::find(longer.resume_points.begin(), longer.resume_points.end(), p) != longer.resume_points.end();
        });
    };
    for (const Entry& entry : entries_) {
        if (entry.tokens.size() >= tokens.size() && common_prefix(entry.tokens, tokens) == tokens.size() &&
            covers(entry, resume_points)) {
            to_close.push_back(stream);
            return to_close;
        }
    }
    const Entry incoming{stream, tokens, 0, resume_points, size};
    std::erase_if(entries_, [&](const Entry& entry) {
        if (common_prefix(entry.tokens, tokens) != entry.tokens.size() || !covers(incoming, entry.resume_points))
            return false;
        cached_tokens_ -= entry.cost;
        to_close.push_back(entry.stream);
        return true;
    });
    while (cached_tokens_ + size > max_tokens_ && !entries_.empty()) {
        auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                       [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
        cached_tokens_ -= oldest->cost;
        to_close.push_back(oldest->stream);
        entries_.erase(oldest);
    }
    cached_tokens_ += size;
    entries_.push_back({stream, std::move(tokens), ++clock_, std::move(resume_points), size});
    return to_close;
}

bool PromptCache::release(StreamId stream) {
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.stream == stream; });
    if (it == entries_.end()) return false;
    cached_tokens_ -= it->cost;
    entries_.erase(it);
    return true;
}

std::vector<StreamId> PromptCache::clear() {
    std::vector<StreamId> streams;
    for (const Entry& entry : entries_) streams.push_back(entry.stream);
    entries_.clear();
    cached_tokens_ = 0;
    return streams;
}

int64_t state_cost_tokens(const model::ModelConfig& c) {
    // Two state buffers and a snapshot per Mamba layer, in fp32, over one
    // position's fp32 K and V in every attention layer.
    const int64_t state_bytes = 3 * int64_t{c.mamba_layer_count()} * static_cast<int64_t>(c.mamba.state_floats()) * 4;
    // A model without attention layers is priced as if one layer of hidden-wide K and V.
    const int64_t kv_bytes = int64_t{c.attention_layer_count()} * 2 * c.num_kv_heads * c.head_dim * 4;
    const int64_t position_bytes = kv_bytes > 0 ? kv_bytes : int64_t{2} * c.hidden_size * 4;
    return (state_bytes + position_bytes - 1) / position_bytes;
}

int32_t resume_from_cache(model::Backend& backend, PromptCache& cache, StreamId kv, std::span<const TokenId> prompt,
                          std::span<const RunningStream> running) {
    const PromptCache::Hit hit = cache.find(prompt);
    // A running stream that holds more of the prompt than the cache does.
    StreamId donor = -1;
    int32_t donor_length = 0;
    if (prompt.size() >= 2) {
        const std::span<const TokenId> usable = prompt.first(prompt.size() - 1);
        for (const RunningStream& r : running) {
            const auto shared = static_cast<int32_t>(
                std::min<size_t>(common_prefix(usable, r.tokens), static_cast<size_t>(backend.stream_length(r.kv))));
            if (shared > std::max(hit.length, donor_length) && backend.holds_state_at(r.kv, shared)) {
                donor = r.kv;
                donor_length = shared;
            }
        }
    }
    int32_t resumed = hit.length;
    if (donor >= 0) {
        backend.copy_prefix(donor, kv, donor_length);
        resumed = donor_length;
    } else if (hit.length > 0 && 2 * int64_t{hit.length} >= hit.entry_tokens &&
               backend.move_prefix(hit.source, kv, hit.length)) {
        // Half the entry or more: what the move throws away (the rest of the
        // entry) is small beside the copy it saves.
        cache.release(hit.source);
        backend.close_stream(hit.source);
    } else if (hit.length > 0) {
        backend.copy_prefix(hit.source, kv, hit.length);
    }
    if (backend.config().recurrent() && prompt.size() >= 2) {
        backend.keep_state_at(kv, static_cast<int32_t>(prompt.size()) - 1);
    }
    return resumed;
}

void retire_to_cache(model::Backend& backend, PromptCache& cache, StreamId kv, std::vector<TokenId> tokens,
                     int32_t prompt_length) {
    const auto kept = static_cast<int32_t>(tokens.size());
    if (kept == 0 || !backend.holds_state_at(kv, kept)) {
        backend.close_stream(kv);
        return;
    }
    std::vector<int32_t> resume_points;
    int64_t state_tokens = 0;
    if (backend.config().recurrent()) {
        state_tokens = state_cost_tokens(backend.config());
        resume_points.push_back(kept);
        const int32_t prompt_end = prompt_length - 1;
        if (prompt_end > 0 && prompt_end < kept && backend.holds_state_at(kv, prompt_end)) {
            resume_points.push_back(prompt_end);
        }
    }
    if (backend.stream_length(kv) > kept) backend.truncate(kv, kept);
    for (StreamId closed : cache.adopt(kv, std::move(tokens), std::move(resume_points), state_tokens)) {
        backend.close_stream(closed);
    }
}

}  // namespace tf::engine
