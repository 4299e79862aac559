// UTF-8 helpers shared by the encoder, the decoders and the chat renderer.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tf::tokenizer::utf8 {

// Length of the well-formed sequence starting at text[at], or 0 if the bytes
// there are not a complete, well-formed UTF-8 sequence.
size_t sequence_length(std::string_view text, size_t at);

// The offset of the first byte that is not well-formed UTF-8, or npos.
size_t first_invalid(std::string_view text);

// Bytes to text the way String::from_utf8_lossy and TextDecoder do: each
// maximal ill-formed subpart becomes one U+FFFD.
std::string lossy(std::string_view bytes);

// How many bytes at the end of `bytes` are a proper prefix of a well-formed
// sequence (0-3): bytes that a later token may complete.
size_t incomplete_tail(std::string_view bytes);

// Decodes the code point at text[at] (text must be valid there); advances at.
char32_t next_code_point(std::string_view text, size_t& at);
void append(std::string& out, char32_t code_point);

// Unicode White_Space (what Rust's char::is_whitespace and Python's str.isspace
// agree on for the characters that matter here).
bool is_whitespace(char32_t code_point);

}  // namespace tf::tokenizer::utf8
