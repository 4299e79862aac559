// The tokenizer's identity, as the record (recall/) stores it: a SHA-256
// digest and the vocabulary size. Version 2 (identity()) covers only what a
// Hugging Face tokenizer.json and a GGUF file converted from it both carry,
// so the two share a record: every id with its spelling (vocabulary and
// added tokens as one list), the merges in rank order, and which ids are
// added tokens. Flags only tokenizer.json has (lstrip, normalized, ...) are
// left out. Version 1 (legacy, what earlier releases wrote into records)
// hashed the vocabulary, merges and added tokens with those flags; it is
// kept so that such records can be recognised. Both are canonical: key
// order, whitespace and merge spelling ("a b" or ["a", "b"]) do not change
// them. Thread-safe.
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

// Version 2: `tokens` are (spelling, id) for the vocabulary and the added
// tokens together (an id listed twice must be spelled the same), any order;
// `added_ids` any order.
TokenizerIdentity compute_identity_v2(std::vector<std::pair<std::string, uint32_t>> tokens,
                                      const std::vector<std::pair<std::string, std::string>>& merges,
                                      std::vector<uint32_t> added_ids, uint32_t vocab_size);

// The identity of a loaded tokenizer (computed once at load).
TokenizerIdentity tokenizer_identity(const Tokenizer& tokenizer);

// Version 1, over tokens as the file spells them: `vocab` in any
// order (sorted by id here), `merges` in rank order, `added` in any order.
TokenizerIdentity compute_identity(std::vector<std::pair<std::string, uint32_t>> vocab,
                                   const std::vector<std::pair<std::string, std::string>>& merges,
                                   std::vector<AddedToken> added, uint32_t vocab_size);

}  // namespace tf::tokenizer
