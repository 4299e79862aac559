// What a loaded Tokenizer holds (internal to tokenizer/). Immutable after
// load_impl() returns.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/chat_template/template.h"
#include "tokenizer/normalize.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

enum class TokenKind : uint8_t { none, vocab, added, special };

// One item of the post-processor's "single" template: the text's ids, or fixed ids.
struct PostItem {
    bool is_sequence = false;
    std::vector<TokenId> ids;
};

struct Tokenizer::Impl {
    std::string source;
    Normalizer normalizer;
    PreTokenizer pre_tokenizer;
    BpeModel model;
    bool byte_level = false;
    std::vector<AddedToken> added;
    AddedTokenMatcher raw_matcher;         // added tokens with normalized=false
    AddedTokenMatcher normalized_matcher;  // added tokens with normalized=true
    std::unordered_map<std::string, TokenId> added_by_content;

    // Decoding: the bytes of each id, what kind of token it is, and what the
    // decoder chain does to the start and the whole of the text.
    std::vector<std::string> pieces;
    std::vector<TokenKind> kinds;
    size_t strip_leading_spaces = 0;
    bool clean_up_spaces = false;

    std::vector<PostItem> post_single;
    SpecialTokenIds special_ids;
    TokenizerIdentity identity;                        // v2
    std::optional<TokenizerIdentity> legacy_identity;  // v1; tokenizer.json only
    uint32_t vocab_size = 0;

    // Chat: the parsed templates (null when absent) and the special-token
    // strings the template sees (bos_token, eos_token, ...).
    std::shared_ptr<const chat::Template> chat_template;
    std::shared_ptr<const chat::Template> tool_use_template;  // a named "tool_use" template, if any
    std::string chat_template_error;  // why the template did not parse, if it did not
    std::vector<std::pair<std::string, std::string>> template_tokens;
};

std::shared_ptr<const Tokenizer::Impl> load_impl(std::string_view tokenizer_json, std::string_view config_json,
                                                 const std::string& source, const std::string& config_source,
                                                 std::string_view chat_template_jinja, bool legacy_identity = true);

// HF's clean_up_tokenization(): drops the space before punctuation and contractions.
std::string clean_up_tokenization(std::string text);

}  // namespace tf::tokenizer
