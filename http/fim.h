// Fill-in-the-middle prompts for /v1/completions' "suffix": the code before
// and after a gap, wrapped in the vocabulary's own FIM tokens in the order
// the model family was trained on, so the model writes the middle.
// Pure functions over the tokenizer; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tf::http {

// The three tokens of one family's FIM form, as ids of this vocabulary.
// Every family known here is trained prefix-suffix-middle (PSM):
// PREFIX_TOKEN prefix SUFFIX_TOKEN suffix MIDDLE_TOKEN, then the middle.
struct FimTokens {
    std::string family;  // "qwen", "starcoder", "deepseek": for messages
    tokenizer::TokenId prefix = 0;
    tokenizer::TokenId suffix = 0;
    tokenizer::TokenId middle = 0;
};

// The FIM tokens the vocabulary has, looked up by their spellings
// (<|fim_prefix|> in Qwen2.5/Qwen3 coder, <fim_prefix> in StarCoder,
// <｜fim▁begin｜> in DeepSeek Coder); absent when it has no full set.
std::optional<FimTokens> find_fim_tokens(const tokenizer::Tokenizer& tokenizer);

// The prompt's ids. What the post-processor adds at the start (a BOS)
// comes first, as for any completion prompt; prefix and suffix are encoded
// as plain text (special tokens' spellings inside code stay text), so the
// code cannot break the FIM structure. Throws TokenizerError on bad UTF-8.
std::vector<tokenizer::TokenId> fim_prompt(const tokenizer::Tokenizer& tokenizer, const FimTokens& fim,
                                           std::string_view prefix, std::string_view suffix);

}  // namespace tf::http
