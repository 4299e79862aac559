// What a MODEL argument names, for the commands that take one: a Hugging
// Face directory (config.json, safetensors, tokenizer.json) or a GGUF model
// (a .gguf file, a split set, or a directory holding one). The weights find
// their own way (Weights::load); these are the other two things a command
// needs from MODEL. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "tokenizer/tokenizer.h"

namespace tf::tools {

// The GGUF file MODEL stands for (model::find_gguf_model), or nullopt for a
// Hugging Face directory. Throws model::LoadError.
std::optional<std::string> gguf_of(const std::string& model);

// The tokenizer: tokenizer.json (+ tokenizer_config.json) of a directory,
// the tokenizer.* keys and chat template of a GGUF. Throws
// tokenizer::TokenizerError or model::LoadError naming the file.
tokenizer::Tokenizer load_model_tokenizer(const std::string& model);

// The name a server answers to by default: the directory's name, or the
// GGUF file's stem without its split suffix ("qwen3-8b-q4_k_m").
std::string default_model_name(const std::string& model);

}  // namespace tf::tools
