// Added tokens (tokenizer.json's "added_tokens"): found in the text before
// normalization and pre-tokenization, leftmost and longest first, the way
// HF's AddedVocabulary splits. Immutable once built; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/error.h"

namespace tf::tokenizer {

struct AddedToken {
    TokenId id = 0;
    std::string content;
    bool special = false;
    bool lstrip = false;       // swallows whitespace on its left
    bool rstrip = false;       // swallows whitespace on its right
    bool normalized = false;   // matched in normalized text rather than in the raw input
    bool single_word = false;  // matched only when not inside a word
};

// A stretch of the input: plain text [begin, end), or an added token.
struct Segment {
    size_t begin = 0, end = 0;
    bool is_token = false;
    TokenId token = 0;
};

class AddedTokenMatcher {
public:
    AddedTokenMatcher() = default;
    // `normalized_pass`: this matcher holds the tokens with normalized=true.
    AddedTokenMatcher(const std::vector<AddedToken>& tokens, bool normalized_pass);

    bool empty() const { return tokens_.empty(); }

    // Splits `text` into segments. With allow_special=false, special tokens
    // are left as plain text (non-special added tokens still match).
    void split(std::string_view text, bool allow_special, std::vector<Segment>& out) const;

private:
    std::vector<AddedToken> tokens_;
    std::array<std::vector<uint32_t>, 256> by_first_byte_;  // indices into tokens_, longest first
};

}  // namespace tf::tokenizer
