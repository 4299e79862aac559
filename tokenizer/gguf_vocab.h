// A GGUF file's tokenizer, as plain data: the tokenizer.* keys llama.cpp's
// converter writes (names in the comments). model/ reads the file and fills
// this; Tokenizer::from_gguf builds the tokenizer the Hugging Face files of
// the same model would give. tokenizer/ itself never parses GGUF.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tf::tokenizer {

// tokenizer.ggml.token_type values.
namespace gguf_token_type {
inline constexpr int32_t normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6;
}

struct GgufVocab {
    std::string source;                 // the .gguf path, for messages
    std::string model;                  // tokenizer.ggml.model: "gpt2" (byte-level BPE) or "llama" (SentencePiece BPE)
    std::string pre;                    // tokenizer.ggml.pre; empty when absent
    std::vector<std::string> tokens;    // tokenizer.ggml.tokens; the id is the position
    std::vector<int32_t> token_types;   // tokenizer.ggml.token_type; may be empty (all normal)
    std::vector<float> scores;          // tokenizer.ggml.scores; may be empty
    std::vector<std::string> merges;    // tokenizer.ggml.merges, "left right"
    std::optional<int32_t> bos, eos, eot, eom, pad, unk, sep;  // tokenizer.ggml.*_token_id
    std::optional<bool> add_bos, add_eos, add_space_prefix;    // tokenizer.ggml.add_bos_token, ...
    std::string chat_template;          // tokenizer.chat_template; empty when absent
};

}  // namespace tf::tokenizer
