// The bodies of POST /tokenize and /detokenize in llama.cpp server's shapes,
// parsed into plain structs, and their replies rendered. JSON stays here.
// Every rejection is an ApiError(400) naming the field. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "http/api_error.h"

namespace tf::http {

// {"content": "...", "add_special": false, "parse_special": true, "with_pieces": false}
struct TokenizeRequest {
    std::string content;
    bool add_special = false;   // what the post-processor adds (a BOS) is added
    bool parse_special = true;  // special tokens' spellings become those tokens
    bool with_pieces = false;   // each id comes with the text it stands for
};

// {"tokens": [ids]}
struct DetokenizeRequest {
    std::vector<int64_t> tokens;  // range-checked by the route against the vocabulary
};

TokenizeRequest parse_tokenize_request(std::string_view body);
DetokenizeRequest parse_detokenize_request(std::string_view body);

// One id and the bytes it stands for.
struct TokenPiece {
    int32_t id = 0;
    std::string piece;
};

// {"tokens": [ids]}, or with pieces {"tokens": [{"id", "piece"}]}: a piece
// that is whole UTF-8 is a string, one that is part of a character (byte
// tokens) is its bytes as an array of numbers, as llama.cpp writes it.
std::string tokenize_body(const std::vector<TokenPiece>& tokens, bool with_pieces);
std::string detokenize_body(const std::string& content);
std::string apply_template_body(const std::string& prompt);

}  // namespace tf::http
