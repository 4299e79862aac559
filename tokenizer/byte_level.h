// GPT-2's byte-level alphabet: every byte 0-255 has a printable stand-in
// character, and byte-level vocabularies (GPT-2, Llama 3, Qwen, tinycode)
// spell their tokens in it. The loader turns each such token back into the
// raw bytes it stands for, so the BPE works on bytes and never maps text into
// the alphabet while encoding. Thread-safe (constant tables).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tf::tokenizer::byte_level {

// The stand-in character (as UTF-8) for a byte.
std::string_view char_for_byte(unsigned char byte);

// A token spelled in the alphabet back to raw bytes; nullopt if some
// character is not in the alphabet.
std::optional<std::string> to_bytes(std::string_view token);

// Raw bytes spelled in the alphabet.
std::string to_alphabet(std::string_view bytes);

}  // namespace tf::tokenizer::byte_level
