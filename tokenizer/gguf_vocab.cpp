// Tokenizer::from_gguf: a GGUF's tokenizer keys rewritten as the
// tokenizer.json and tokenizer_config.json the Hugging Face files of the
// same model hold, then loaded by the one loader (load.cpp), so a GGUF
// tokenizes, decodes and renders chat exactly as those files do.
//
// What llama.cpp's names stand for:
//   gpt2:  byte-level BPE; `pre` names the split regex (llama-vocab.cpp's
//          pre-tokenizer types), then bytes map to the GPT-2 alphabet.
//   llama: SentencePiece BPE: spaces become U+2581, a leading one is added
//          (add_space_prefix), unknown characters fall back to <0xXX> byte
//          tokens; the file has scores, not merges, and the merges are the
//          ones transformers' converter derives from the scores.
// Token types: control (3) ids are special added tokens, user-defined (4)
// plain added tokens; unused (5) entries are the padding llama.cpp's
// converter appends up to the model's vocabulary size ("[PAD151665]"),
// which no Hugging Face tokenizer holds: they are left out, as there.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <unordered_map>

#include "tokenizer/tokenizer_impl.h"

namespace tf::tokenizer {

namespace {

using json = nlohmann::json;  // std::map objects: a 150k-token vocabulary inserts in O(log n)

struct PreTokenizerName {
    const char* name;
    const char* regex;
    bool nfc;            // the Hugging Face files of these models normalize to NFC first
    bool ignore_merges;  // tiktoken-style: a word that is a token is that token, merges or not
    bool clean_up;       // decoding drops the space before punctuation (clean_up_tokenization_spaces)
};

// The regexes of llama.cpp's pre-tokenizer types, as the models' own
// tokenizer.json files spell them.
constexpr PreTokenizerName kPreTokenizers[] = {
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     true, false, false},
    {"llama-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     false, true, true},
    // Smaug's tokenizer hashes differently but splits exactly as Llama 3's.
    {"smaug-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     false, true, true},
    {"tekken",
     R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     false, true, false},
    {"default", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", false, false, true},
};

[[noreturn]] void fail(const GgufVocab& v, const std::string& what) { throw TokenizerError(v.source + ": " + what); }

int32_t type_of(const GgufVocab& v, size_t id) {
    return v.token_types.empty() ? gguf_token_type::normal : v.token_types[id];
}

void check(const GgufVocab& v) {
    if (v.tokens.empty()) fail(v, "tokenizer.ggml.tokens is missing or empty");
    if (!v.token_types.empty() && v.token_types.size() != v.tokens.size()) {
        fail(v, "tokenizer.ggml.token_type has " + std::to_string(v.token_types.size()) + " entries for " +
                    std::to_string(v.tokens.size()) + " tokens");
    }
    if (!v.scores.empty() && v.scores.size() != v.tokens.size()) {
        fail(v, "tokenizer.ggml.scores has " + std::to_string(v.scores.size()) + " entries for " +
                    std::to_string(v.tokens.size()) + " tokens");
    }
    const std::pair<const char*, const std::optional<int32_t>*> ids[] = {
        {"bos", &v.bos}, {"eos", &v.eos}, {"eot", &v.eot}, {"eom", &v.eom},
        {"padding", &v.pad}, {"unknown", &v.unk}, {"seperator", &v.sep}};
    for (const auto& [name, id] : ids) {
        if (*id && (**id < 0 || static_cast<size_t>(**id) >= v.tokens.size())) {
            fail(v, std::string("tokenizer.ggml.") + name + "_token_id " + std::to_string(**id) +
                        " is outside the " + std::to_string(v.tokens.size()) + " tokens");
        }
    }
}

// The merges transformers' SentencePiece converter makes: every split of a
// token into two tokens, ranked by the whole token's score (highest first),
// then by the two halves' ids.
json merges_from_scores(const GgufVocab& v, const std::unordered_map<std::string, uint32_t>& ids) {
    struct Merge {
        float score;
        uint32_t left, right;
    };
    std::vector<Merge> merges;
    for (size_t id = 0; id < v.tokens.size(); ++id) {
        if (type_of(v, id) != gguf_token_type::normal) continue;
        const std::string& token = v.tokens[id];
        for (size_t cut = 1; cut < token.size(); ++cut) {
            if ((static_cast<unsigned char>(token[cut]) & 0xC0) == 0x80) continue;  // inside a UTF-8 character
            const auto left = ids.find(token.substr(0, cut)), right = ids.find(token.substr(cut));
            if (left == ids.end() || right == ids.end()) continue;
            merges.push_back({v.scores[id], left->second, right->second});
        }
    }
    std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
        if (a.score != b.score) return a.score > b.score;
        return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    json out = json::array();
    for (const Merge& m : merges) out.push_back(json::array({v.tokens[m.left], v.tokens[m.right]}));
    return out;
}

json template_processing(const std::string& bos, int32_t bos_id) {
    return {{"type", "TemplateProcessing"},
            {"single", json::array({json{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
                                    json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
            {"pair", json::array({json{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
                                  json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                  json{{"Sequence", {{"id", "B"}, {"type_id", 1}}}}})},
            {"special_tokens", {{bos, {{"id", bos}, {"ids", json::array({bos_id})}, {"tokens", json::array({bos})}}}}}};
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const GgufVocab& v) {
    check(v);
    const bool spm = v.model == "llama";
    if (!spm && v.model != "gpt2") {
        fail(v, "tokenizer.ggml.model '" + v.model + "' is not one tensorfold reads (gpt2, llama)");
    }
    json tokenizer = {{"version", "1.0"}};
    bool clean_up = false;
    json vocab = json::object(), added = json::array();
    std::unordered_map<std::string, uint32_t> ids;
    for (size_t id = 0; id < v.tokens.size(); ++id) {
        const int32_t type = type_of(v, id);
        const std::string& token = v.tokens[id];
        if (type == gguf_token_type::unused) continue;
        const bool special = type == gguf_token_type::control || (spm && type == gguf_token_type::unknown);
        if (special || type == gguf_token_type::user_defined) {
            added.push_back({{"id", id}, {"content", token}, {"single_word", false}, {"lstrip", false},
                             {"rstrip", false}, {"normalized", false}, {"special", special}});
            if (!spm) continue;  // byte-level vocabularies keep added tokens out of the BPE model
        }
        if (ids.emplace(token, static_cast<uint32_t>(id)).second) vocab[token] = id;
    }
    json model = {{"type", "BPE"}, {"dropout", nullptr}, {"fuse_unk", spm}, {"byte_fallback", spm},
                  {"ignore_merges", false}, {"vocab", vocab}};
    std::optional<std::string> bos_text;
    if (v.bos) bos_text = v.tokens[static_cast<size_t>(*v.bos)];
    if (spm) {
        if (v.scores.empty()) fail(v, "tokenizer.ggml.scores is missing: a llama (SentencePiece) vocabulary needs them");
        if (v.unk) model["unk_token"] = v.tokens[static_cast<size_t>(*v.unk)];
        model["merges"] = merges_from_scores(v, ids);
        json normalize = json::array();
        if (v.add_space_prefix.value_or(true)) normalize.push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
        normalize.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}});
        tokenizer["normalizer"] = {{"type", "Sequence"}, {"normalizers", normalize}};
        tokenizer["pre_tokenizer"] = nullptr;
        json decoders = json::array({json{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                                     json{{"type", "ByteFallback"}}, json{{"type", "Fuse"}}});
        if (v.add_space_prefix.value_or(true)) {
            decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
        }
        tokenizer["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
    } else {
        if (v.merges.empty()) fail(v, "tokenizer.ggml.merges is missing: a gpt2 (byte-level BPE) vocabulary needs them");
        model["merges"] = v.merges;
        const std::string pre = v.pre.empty() ? "default" : v.pre;
        const PreTokenizerName* known = nullptr;
        for (const PreTokenizerName& p : kPreTokenizers) {
            if (pre == p.name) known = &p;
        }
        if (!known) {
            std::string names;
            for (const PreTokenizerName& p : kPreTokenizers) names += std::string(names.empty() ? "" : ", ") + p.name;
            fail(v, "tokenizer.ggml.pre '" + pre + "' is not a pre-tokenizer tensorfold knows (" + names + ")");
        }
        if (known->nfc) tokenizer["normalizer"] = {{"type", "NFC"}};
        model["ignore_merges"] = known->ignore_merges;
        clean_up = known->clean_up;
        tokenizer["pre_tokenizer"] = {
            {"type", "Sequence"},
            {"pretokenizers",
             json::array({json{{"type", "Split"}, {"pattern", {{"Regex", known->regex}}}, {"behavior", "Isolated"},
                               {"invert", false}},
                          json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                               {"use_regex", false}}})}};
        tokenizer["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
                                {"use_regex", true}};
    }
    tokenizer["added_tokens"] = added;
    tokenizer["model"] = model;
    // BOS is added where the file says so, and by default for SentencePiece
    // vocabularies (llama.cpp's default for them).
    if (bos_text && v.add_bos.value_or(spm)) tokenizer["post_processor"] = template_processing(*bos_text, *v.bos);

    json config = {{"clean_up_tokenization_spaces", clean_up}};
    const std::pair<const char*, const std::optional<int32_t>*> named[] = {
        {"bos_token", &v.bos}, {"eos_token", &v.eos}, {"pad_token", &v.pad}, {"unk_token", &v.unk}};
    for (const auto& [key, id] : named) {
        if (*id) config[key] = v.tokens[static_cast<size_t>(**id)];
    }
    if (!v.chat_template.empty()) config["chat_template"] = v.chat_template;
    try {
        return Tokenizer(load_impl(tokenizer.dump(), config.dump(), v.source + " (tokenizer.ggml.*)",
                                   v.source + " (tokenizer.chat_template)", {}, /*legacy_identity=*/false));
    } catch (const nlohmann::json::exception& e) {
        fail(v, std::string("tokenizer keys: ") + e.what());
    }
}

}  // namespace tf::tokenizer
