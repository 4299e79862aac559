// The BPE model: merge-rank byte-pair encoding of one pre-tokenized piece.
// Tokens are held in "model form": raw bytes for byte-level vocabularies
// (see byte_level.h), the vocabulary's own spelling otherwise (SentencePiece
// style, with U+2581 for spaces and <0xNN> byte-fallback tokens).
//
// Speed comes from three things: merges are looked up by (left id, right id)
// in an open-addressing table, a word merges in place over a small array
// (a heap of candidate pairs for long words), and whole words are cached per
// thread. Immutable once built; thread-safe (the cache is thread_local).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/error.h"

namespace tf::tokenizer {

struct BpeConfig {
    std::vector<std::pair<std::string, TokenId>> vocab;       // model form
    std::vector<std::pair<std::string, std::string>> merges;  // model form, in rank order
    bool byte_level = false;     // initial symbols are bytes; otherwise UTF-8 characters
    bool byte_fallback = false;  // unknown characters become <0xNN> tokens
    std::optional<TokenId> unk;  // the unknown token, if any
    bool fuse_unk = false;       // consecutive unknowns become one
    bool ignore_merges = false;  // a word that is itself a token is that token (Llama 3)
    std::string where;           // "FILE: model" for error messages
};

class BpeModel {
public:
    BpeModel() = default;
    // Throws TokenizerError naming the merge when one refers to a token that
    // is not in the vocabulary.
    explicit BpeModel(const BpeConfig& config);

    // Appends the ids of one piece (model-form text: raw bytes or UTF-8).
    void encode(std::string_view word, std::vector<TokenId>& out) const;

    std::optional<TokenId> token_id(std::string_view token) const;

private:
    struct MergeSlot {
        uint64_t key = ~uint64_t{0};  // (left << 32) | right; all ones marks an empty slot
        uint32_t rank = 0;
        TokenId merged = 0;
    };
    struct StringHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };

    const MergeSlot* find_merge(TokenId left, TokenId right) const;
    void initial_symbols(std::string_view word, std::vector<TokenId>& symbols) const;
    void merge_small(std::vector<TokenId>& symbols) const;
    void merge_long(std::vector<TokenId>& symbols) const;
    void encode_uncached(std::string_view word, std::vector<TokenId>& out) const;

    std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>> vocab_;
    std::vector<MergeSlot> merges_;  // power-of-two open addressing
    uint64_t merge_mask_ = 0;
    int64_t byte_token_[256] = {};  // byte-level: the token of each single byte, or -1
    int64_t fallback_token_[256] = {};  // byte fallback: the <0xNN> token of each byte, or -1
    bool byte_level_ = false, byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
    std::optional<TokenId> unk_;
    uint64_t instance_ = 0;  // identifies this model in the per-thread cache
};

}  // namespace tf::tokenizer
