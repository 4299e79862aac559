// The tokenizer's identity, as the record (recall/) stores it: "a digest of
// its vocabulary, merges and added tokens, its vocabulary size"
// (seed/recall.md). SHA-256 over a canonical serialization, so the same
// content gives the same digest whatever the JSON key order, whitespace or
// merge spelling ("a b" or ["a", "b"]); any change to a token, a merge or an
// added token (content, id or flags) changes it. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tf::tokenizer {

struct TokenizerIdentity {
    std::string digest_hex;  // 64 lowercase hex digits
    uint32_t vocab_size = 0;  // highest id of the vocabulary and added tokens, plus one
};

struct AddedToken;
class Tokenizer;

// The identity of a loaded tokenizer (computed once at load).
TokenizerIdentity tokenizer_identity(const Tokenizer& tokenizer);

// The digest itself, over tokens as the file spells them: `vocab` in any
// order (sorted by id here), `merges` in rank order, `added` in any order.
TokenizerIdentity compute_identity(std::vector<std::pair<std::string, uint32_t>> vocab,
                                   const std::vector<std::pair<std::string, std::string>>& merges,
                                   std::vector<AddedToken> added, uint32_t vocab_size);

}  // namespace tf::tokenizer
