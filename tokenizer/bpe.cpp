#include "tokenizer/bpe.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <queue>

#include "tokenizer/utf8.h"

namespace tf::tokenizer {

namespace {

constexpr uint32_t kNoRank = ~uint32_t{0};
constexpr size_t kSmallWord = 48;         // up to this many symbols, merge by scanning
constexpr size_t kMaxCachedWordBytes = 64;
constexpr size_t kMaxCacheEntries = 1 << 17;

uint64_t mix(uint64_t key) {  // splitmix64's finalizer
    key ^= key >> 30;
    key *= 0xbf58476d1ce4e5b9ULL;
    key ^= key >> 27;
    key *= 0x94d049bb133111ebULL;
    return key ^ (key >> 31);
}

std::atomic<uint64_t> next_instance{1};

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Whole-word results of the model this thread used last.
struct WordCache {
    uint64_t owner = 0;
    std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>> words;
};

WordCache& thread_cache() {
    thread_local WordCache cache;
    return cache;
}

}  // namespace

BpeModel::BpeModel(const BpeConfig& config)
    : byte_level_(config.byte_level),
      byte_fallback_(config.byte_fallback),
      fuse_unk_(config.fuse_unk),
      ignore_merges_(config.ignore_merges),
      unk_(config.unk),
      instance_(next_instance.fetch_add(1)) {
    vocab_.reserve(config.vocab.size());
    for (const auto& [token, id] : config.vocab) vocab_.emplace(token, id);
    for (int b = 0; b < 256; ++b) {
        const std::string single(1, static_cast<char>(b));
        auto it = vocab_.find(single);
        byte_token_[b] = it == vocab_.end() ? -1 : static_cast<int64_t>(it->second);
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        auto fb = vocab_.find(std::string_view(name));
        fallback_token_[b] = fb == vocab_.end() ? -1 : static_cast<int64_t>(fb->second);
    }

    size_t capacity = 16;
    while (capacity < config.merges.size() * 2) capacity <<= 1;
    merges_.assign(capacity, MergeSlot{});
    merge_mask_ = capacity - 1;
    for (size_t rank = 0; rank < config.merges.size(); ++rank) {
        const auto& [left, right] = config.merges[rank];
        auto l = vocab_.find(left), r = vocab_.find(right), m = vocab_.find(left + right);
        const char* missing = l == vocab_.end() ? "its first token" : r == vocab_.end() ? "its second token"
                                                                   : m == vocab_.end() ? "the merged token" : nullptr;
        if (missing != nullptr) {
            throw TokenizerError(config.where + ": merges[" + std::to_string(rank) + "]: " + missing +
                                 " is not in the vocabulary");
        }
        const uint64_t key = (uint64_t{l->second} << 32) | r->second;
        for (uint64_t slot = mix(key) & merge_mask_;; slot = (slot + 1) & merge_mask_) {
            if (merges_[slot].key == key) break;  // a repeated merge keeps its first (lowest) rank
            if (merges_[slot].key == ~uint64_t{0}) {
                merges_[slot] = MergeSlot{key, static_cast<uint32_t>(rank), m->second};
                break;
            }
        }
    }
}

std::optional<TokenId> BpeModel::token_id(std::string_view token) const {
    auto it = vocab_.find(token);
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
}

const BpeModel::MergeSlot* BpeModel::find_merge(TokenId left, TokenId right) const {
    const uint64_t key = (uint64_t{left} << 32) | right;
    for (uint64_t slot = mix(key) & merge_mask_;; slot = (slot + 1) & merge_mask_) {
        const MergeSlot& s = merges_[slot];
        if (s.key == key) return &s;
        if (s.key == ~uint64_t{0}) return nullptr;
    }
}

// Symbols before any merge: one per byte (byte-level) or per character, with
// unknown characters as byte-fallback tokens or the unknown token (HF's order:
// this happens before merging).
void BpeModel::initial_symbols(std::string_view word, std::vector<TokenId>& symbols) const {
    symbols.clear();
    bool last_was_unk = false;
    const auto push_unknown = [&]() {
        if (!unk_) return;  // no unknown token: HF drops the character
        if (fuse_unk_ && last_was_unk) return;
        symbols.push_back(*unk_);
        last_was_unk = true;
    };
    if (byte_level_) {
        for (unsigned char b : word) {
            if (byte_token_[b] >= 0) {
                symbols.push_back(static_cast<TokenId>(byte_token_[b]));
                last_was_unk = false;
            } else {
                push_unknown();
            }
        }
        return;
    }
    size_t at = 0;
    while (at < word.size()) {
        size_t n = utf8::sequence_length(word, at);
        if (n == 0) n = 1;
        auto it = vocab_.find(word.substr(at, n));
        if (it != vocab_.end()) {
            symbols.push_back(it->second);
            last_was_unk = false;
        } else {
            bool all_bytes = byte_fallback_;
            for (size_t k = 0; all_bytes && k < n; ++k) {
                all_bytes = fallback_token_[static_cast<unsigned char>(word[at + k])] >= 0;
            }
            if (all_bytes) {
                for (size_t k = 0; k < n; ++k) {
                    symbols.push_back(static_cast<TokenId>(fallback_token_[static_cast<unsigned char>(word[at + k])]));
                }
                last_was_unk = false;
            } else {
                push_unknown();
            }
        }
        at += n;
    }
}

// Short words: keep the rank of each adjacent pair and merge the lowest
// (leftmost on ties) until no pair merges.
void BpeModel::merge_small(std::vector<TokenId>& symbols) const {
    if (symbols.size() < 2) return;
    uint32_t ranks[kSmallWord];
    TokenId merged_ids[kSmallWord];
    size_t n = symbols.size();
    const auto lookup = [&](size_t i) {
        const MergeSlot* m = find_merge(symbols[i], symbols[i + 1]);
        ranks[i] = m ? m->rank : kNoRank;
        merged_ids[i] = m ? m->merged : 0;
    };
    for (size_t i = 0; i + 1 < n; ++i) lookup(i);
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; ++i) {
            if (ranks[i] < ranks[best]) best = i;
        }
        if (ranks[best] == kNoRank) break;
        symbols[best] = merged_ids[best];
        for (size_t i = best + 1; i + 1 < n; ++i) {
            symbols[i] = symbols[i + 1];
            ranks[i] = ranks[i + 1];
            merged_ids[i] = merged_ids[i + 1];
        }
        --n;
        symbols.resize(n);
        if (best + 1 < n) lookup(best);
        if (best > 0) lookup(best - 1);
    }
}

// Long words (Llama 2 lines, whitespace runs): a heap of candidate pairs
// ordered by (rank, position) over a linked list of symbols; stale entries
// are skipped when popped.
void BpeModel::merge_long(std::vector<TokenId>& symbols) const {
    const size_t n = symbols.size();
    std::vector<int32_t> prev(n), next(n);
    std::vector<bool> alive(n, true);
    for (size_t i = 0; i < n; ++i) {
        prev[i] = static_cast<int32_t>(i) - 1;
        next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
    }
    struct Candidate {
        uint32_t rank;
        int32_t pos;
        TokenId left, right;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    const auto consider = [&](int32_t pos) {
        if (pos < 0 || next[pos] < 0) return;
        const MergeSlot* m = find_merge(symbols[pos], symbols[next[pos]]);
        if (m) heap.push({m->rank, pos, symbols[pos], symbols[next[pos]]});
    };
    for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int32_t>(i));
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        const int32_t right = next[c.pos];
        if (!alive[c.pos] || right < 0 || symbols[c.pos] != c.left || symbols[right] != c.right) continue;
        symbols[c.pos] = find_merge(c.left, c.right)->merged;
        alive[right] = false;
        next[c.pos] = next[right];
        if (next[right] >= 0) prev[next[right]] = c.pos;
        consider(prev[c.pos]);
        consider(c.pos);
    }
    size_t out = 0;
    for (int32_t i = 0; i >= 0; i = next[i]) symbols[out++] = symbols[i];
    symbols.resize(out);
}

void BpeModel::encode_uncached(std::string_view word, std::vector<TokenId>& out) const {
    if (ignore_merges_) {
        auto it = vocab_.find(word);
        if (it != vocab_.end()) {
            out.push_back(it->second);
            return;
        }
    }
    thread_local std::vector<TokenId> symbols;
    initial_symbols(word, symbols);
    if (symbols.size() <= kSmallWord) {
        merge_small(symbols);
    } else {
        merge_long(symbols);
    }
    out.insert(out.end(), symbols.begin(), symbols.end());
}

void BpeModel::encode(std::string_view word, std::vector<TokenId>& out) const {
    if (word.empty()) return;
    if (word.size() > kMaxCachedWordBytes) {
        encode_uncached(word, out);
        return;
    }
    WordCache& cache = thread_cache();
    if (cache.owner != instance_) {
        cache.words.clear();
        cache.owner = instance_;
    }
    auto hit = cache.words.find(word);
    if (hit != cache.words.end()) {
        out.insert(out.end(), hit->second.begin(), hit->second.end());
        return;
    }
    const size_t before = out.size();
    encode_uncached(word, out);
    if (cache.words.size() >= kMaxCacheEntries) cache.words.clear();
    cache.words.emplace(std::string(word), std::vector<TokenId>(out.begin() + static_cast<long>(before), out.end()));
}

}  // namespace tf::tokenizer
