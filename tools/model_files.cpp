#include "tools/model_files.h"

#include <filesystem>

#include "model/gguf.h"
#include "model/gguf_model.h"
#include "model/load_error.h"
#include "tokenizer/gguf_vocab.h"

namespace tf::tools {

namespace {

std::optional<int32_t> id_key(const model::GgufFile& file, const char* key) {
    const std::optional<uint64_t> id = file.optional_unsigned_int(key);
    if (!id) return std::nullopt;
    if (*id > INT32_MAX) throw model::LoadError(file.path() + ": " + key + " " + std::to_string(*id) + " is not a token id");
    return static_cast<int32_t>(*id);
}

// The tokenizer.* keys as plain data: tokenizer/ reads no GGUF itself.
tokenizer::GgufVocab vocab_of(const model::GgufFile& file) {
    tokenizer::GgufVocab v;
    v.source = file.path();
    v.model = file.string("tokenizer.ggml.model");
    v.pre = file.optional_string("tokenizer.ggml.pre").value_or("");
    v.tokens = file.strings("tokenizer.ggml.tokens");
    for (int64_t type : file.ints("tokenizer.ggml.token_type")) v.token_types.push_back(static_cast<int32_t>(type));
    for (double score : file.reals("tokenizer.ggml.scores")) v.scores.push_back(static_cast<float>(score));
    v.merges = file.strings("tokenizer.ggml.merges");
    v.bos = id_key(file, "tokenizer.ggml.bos_token_id");
    v.eos = id_key(file, "tokenizer.ggml.eos_token_id");
    v.eot = id_key(file, "tokenizer.ggml.eot_token_id");
    v.eom = id_key(file, "tokenizer.ggml.eom_token_id");
    v.pad = id_key(file, "tokenizer.ggml.padding_token_id");
    v.unk = id_key(file, "tokenizer.ggml.unknown_token_id");
    v.sep = id_key(file, "tokenizer.ggml.seperator_token_id");  // llama.cpp's spelling
    v.add_bos = file.optional_boolean("tokenizer.ggml.add_bos_token");
    v.add_eos = file.optional_boolean("tokenizer.ggml.add_eos_token");
    v.add_space_prefix = file.optional_boolean("tokenizer.ggml.add_space_prefix");
    v.chat_template = file.optional_string("tokenizer.chat_template").value_or("");
    return v;
}

}  // namespace

std::optional<std::string> gguf_of(const std::string& model) { return model::find_gguf_model(model); }

tokenizer::Tokenizer load_model_tokenizer(const std::string& model) {
    const std::optional<std::string> gguf = gguf_of(model);
    if (!gguf) return tokenizer::Tokenizer::load(model);
    const model::GgufFile file = model::GgufFile::open(*gguf);
    return tokenizer::Tokenizer::from_gguf(vocab_of(file));
}

std::string default_model_name(const std::string& model) {
    namespace fs = std::filesystem;
    if (const std::optional<std::string> gguf = gguf_of(model)) {
        const std::string file = fs::path(*gguf).filename().string();
        if (const auto split = model::gguf_split_name(file)) return split->stem;
        return fs::path(file).stem().string();
    }
    fs::path dir = fs::path(model).lexically_normal();
    if (!dir.has_filename()) dir = dir.parent_path();  // "models/tinycode/"
    return dir.filename().string();
}

}  // namespace tf::tools
