// A Hugging Face tokenizer.json (BPE) with its tokenizer_config.json: encode,
// decode, chat template, identity.
//
//   auto tok = tf::tokenizer::Tokenizer::load("models/tinycode");
//   std::vector<TokenId> ids = tok.encode("def f():", /*allow_special=*/true);
//   std::string text = tok.decode(ids);
//   std::string prompt = tok.render_chat({.messages = {{"user", "Hi"}}});
//   TokenizerIdentity who = tok.identity();
//
// Supported: model.type BPE (byte-level like GPT-2/Llama 3/Qwen, or
// SentencePiece-style with byte fallback like Llama 2); normalizers NFC, NFD,
// NFKC, NFKD, Lowercase, Prepend, Replace (string), Strip, Sequence;
// pre-tokenizers Split (regex or string), ByteLevel, Metaspace, Sequence;
// decoders ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace,
// Sequence; post-processors ByteLevel, TemplateProcessing, Sequence. Anything
// else is a load error that names it.
//
// Thread-safety: a loaded Tokenizer is immutable; one instance may be shared
// by any number of threads (copies share the same state). The BPE word cache
// is per thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/chat.h"
#include "tokenizer/error.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/identity.h"

namespace tf::tokenizer {

// The tokens tokenizer_config.json names (bos_token, ...), when it names them
// and they exist.
struct SpecialTokenIds {
    std::optional<TokenId> bos, eos, pad, unk;
};

class Tokenizer {
public:
    // `path`: a model directory (tokenizer.json, optional tokenizer_config.json
    // and chat_template.jinja) or a tokenizer.json file. Throws TokenizerError.
    static Tokenizer load(const std::filesystem::path& path);

    // From file contents. `config_json` may be empty (no tokenizer_config.json);
    // `source` names the file in error messages; a non-empty
    // `chat_template_jinja` overrides the config's template.
    static Tokenizer from_json(std::string_view tokenizer_json, std::string_view config_json = {},
                               const std::string& source = "tokenizer.json",
                               std::string_view chat_template_jinja = {});

    // From a GGUF file's tokenizer keys (gguf_vocab.h): `gpt2` vocabularies
    // with the pre-tokenizer `pre` names in llama.cpp (qwen2, llama-bpe,
    // tekken, default), `llama` (SentencePiece) ones with merges implied by
    // their scores. Throws TokenizerError naming the file and the key.
    static Tokenizer from_gguf(const GgufVocab& vocab);

    // UTF-8 text to ids. allow_special=false leaves special tokens' text as
    // plain text (use it for untrusted content); add_special_tokens adds what
    // the post-processor adds (Llama 2's BOS). Throws TokenizerError when
    // `text` is not valid UTF-8.
    std::vector<TokenId> encode(std::string_view text, bool allow_special = true,
                                bool add_special_tokens = false) const;

    // Ids to UTF-8 text (bytes that do not form UTF-8 become U+FFFD). Throws
    // TokenizerError for an id outside the vocabulary.
    std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = false) const;

    // The bytes one token stands for (may be part of a UTF-8 character);
    // added tokens give their content. Throws for an unknown id.
    const std::string& token_to_piece(TokenId id) const;
    // Whether `id` has a piece: false past the vocabulary, as for the padded
    // embedding rows of a model whose vocab_size exceeds its tokenizer's.
    bool has_piece(TokenId id) const;
    std::optional<TokenId> token_to_id(std::string_view token) const;  // vocabulary spelling or added content

    uint32_t vocab_size() const;  // highest id plus one, added tokens included
    bool is_special(TokenId id) const;
    const SpecialTokenIds& special_ids() const;

    // Renders the chat template (tokenizer_config.json's chat_template, or
    // chat_template.jinja beside it). Throws TokenizerError when there is no
    // template, it uses something outside the supported Jinja subset, or it
    // calls raise_exception.
    bool has_chat_template() const;
    std::string render_chat(const ChatRequest& request) const;

    // Whether the template a request with tools renders (the "tool_use"
    // template when the config names one, else the default) reads the
    // `tools` variable; false without a template.
    bool supports_tools() const;
    // That template's Jinja source (empty without a template): the HTTP
    // layer reads from it which tool-call format the model was taught.
    const std::string& tools_template_source() const;

    const TokenizerIdentity& identity() const;
    // The v1 identity (identity.h) of a tokenizer read from tokenizer.json;
    // absent for one read from a GGUF, which no earlier release served.
    const std::optional<TokenizerIdentity>& legacy_identity() const;
    const std::string& source() const;  // the file it was loaded from

    struct Impl;

private:
    explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const Impl> impl_;

    friend class Detokenizer;
};

}  // namespace tf::tokenizer
