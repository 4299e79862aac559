#include "http/fim.h"

#include <algorithm>

namespace tf::http {

namespace {

struct FimSpelling {
    const char* family;
    const char* prefix;
    const char* suffix;
    const char* middle;
};

// DeepSeek Coder names its tokens after the hole: begin (before the
// prefix), hole (where the middle goes, before the suffix), end (before the
// middle). Its order is the same PSM as the others'.
constexpr FimSpelling kSpellings[] = {
    {"qwen", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},
    {"starcoder", "<fim_prefix>", "<fim_suffix>", "<fim_middle>"},
    {"deepseek",
     "<\xef\xbd\x9c"
     "fim\xe2\x96\x81"
     "begin\xef\xbd\x9c>",
     "<\xef\xbd\x9c"
     "fim\xe2\x96\x81"
     "hole\xef\xbd\x9c>",
     "<\xef\xbd\x9c"
     "fim\xe2\x96\x81"
     "end\xef\xbd\x9c>"},
};

}  // namespace

std::optional<FimTokens> find_fim_tokens(const tokenizer::Tokenizer& tokenizer) {
    for (const FimSpelling& s : kSpellings) {
        const auto prefix = tokenizer.token_to_id(s.prefix);
        const auto suffix = tokenizer.token_to_id(s.suffix);
        const auto middle = tokenizer.token_to_id(s.middle);
        if (prefix && suffix && middle) return FimTokens{s.family, *prefix, *suffix, *middle};
    }
    return std::nullopt;
}

std::vector<tokenizer::TokenId> fim_prompt(const tokenizer::Tokenizer& tokenizer, const FimTokens& fim,
                                           std::string_view prefix, std::string_view suffix) {
    // What the post-processor puts before every prompt (Llama's BOS; nothing
    // for Qwen): a probe text framed, less the probe and what follows it,
    // since a closing EOS must not land before the FIM tokens.
    const std::vector<tokenizer::TokenId> plain = tokenizer.encode("a", /*allow_special=*/false);
    const std::vector<tokenizer::TokenId> framed =
        tokenizer.encode("a", /*allow_special=*/false, /*add_special_tokens=*/true);
    const auto probe = std::search(framed.begin(), framed.end(), plain.begin(), plain.end());
    std::vector<tokenizer::TokenId> ids(framed.begin(), probe);
    const auto append = [&](std::string_view text) {
        const std::vector<tokenizer::TokenId> part = tokenizer.encode(text, /*allow_special=*/false);
        ids.insert(ids.end(), part.begin(), part.end());
    };
    ids.push_back(fim.prefix);
    append(prefix);
    ids.push_back(fim.suffix);
    append(suffix);
    ids.push_back(fim.middle);
    return ids;
}

}  // namespace tf::http
