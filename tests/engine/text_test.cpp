// Replies as text: the streaming detokenizer and stop strings through the
// engine, on the real tinycode model and tokenizer.
#include <gtest/gtest.h>

#include "engine/tokenizer_text.h"
#include "engine_fixture.h"

namespace tf::engine {
namespace {

using namespace testing;

const tokenizer::Tokenizer& tinycode_tokenizer() {
    static tokenizer::Tokenizer t = tokenizer::Tokenizer::load(tinycode_dir());
    return t;
}

// The tokenizer counts ids as uint32 (as the record stores them); the model as int32.
std::vector<TokenId> encode(std::string_view text) {
    std::vector<tokenizer::TokenId> ids = tinycode_tokenizer().encode(text);
    return std::vector<TokenId>(ids.begin(), ids.end());
}
std::string decode(const std::vector<TokenId>& tokens) {
    std::vector<tokenizer::TokenId> ids(tokens.begin(), tokens.end());
    return tinycode_tokenizer().decode(ids, /*skip_special_tokens=*/true);
}

GenerationRequest code_request(int32_t max_tokens) {
    return make_request(encode("def fibonacci(n):\n    "), 0.0f, 1.0f, 0, max_tokens);
}

TEST(EngineText, TheTextIsTheDecodedReply) {
    Engine engine(tinycode(), CostCurve::flat(64), EngineOptions{}, tokenizer_text(tinycode_tokenizer()));
    Completion c = engine.generate(code_request(40));
    ASSERT_FALSE(c.tokens.empty());
    EXPECT_EQ(c.text, decode(c.tokens));
}

TEST(EngineText, AStopStringEndsTheReplyBeforeIt) {
    Engine engine(tinycode(), CostCurve::flat(64), EngineOptions{}, tokenizer_text(tinycode_tokenizer()));
    Completion full = engine.generate(code_request(60));
    const std::string text = full.text;
    ASSERT_GT(text.size(), 12u);
    // Stop at a piece of text from the middle of the unconstrained reply.
    const std::string stop = text.substr(text.size() / 2, 3);
    GenerationRequest stopped = code_request(60);
    stopped.stop_strings = {stop};
    Completion c = engine.generate(stopped);
    EXPECT_EQ(c.finish, FinishReason::stop_string);
    EXPECT_EQ(c.text, text.substr(0, text.find(stop)));
    EXPECT_EQ(c.text.find(stop), std::string::npos);
}

TEST(EngineText, StopStringsNeedADecoder) {
    Engine engine(tinycode(), CostCurve::flat(64), EngineOptions{});
    GenerationRequest r = code_request(4);
    r.stop_strings = {"x"};
    EXPECT_THROW(engine.submit(r), std::invalid_argument);
}

TEST(EngineText, MaxTokensEndsTheReplyWithLength) {
    Engine engine(tinycode(), CostCurve::flat(64), EngineOptions{}, tokenizer_text(tinycode_tokenizer()));
    GenerationRequest r = code_request(5);
    r.stop_tokens.clear();
    Completion c = engine.generate(r);
    EXPECT_EQ(c.tokens.size(), 5u);
    EXPECT_EQ(c.finish, FinishReason::length);
}

TEST(EngineText, BadRequestsAreRefusedWithTheField) {
    Engine engine(tinycode(), CostCurve::flat(64), EngineOptions{});
    GenerationRequest empty = code_request(4);
    empty.prompt.clear();
    EXPECT_THROW(engine.submit(empty), std::invalid_argument);
    GenerationRequest bad_id = code_request(4);
    bad_id.prompt.push_back(9000);
    try {
        engine.submit(bad_id);
        ADD_FAILURE();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("token id 9000"), std::string::npos) << e.what();
    }
    GenerationRequest too_long = code_request(4);
    too_long.prompt.assign(5000, 1);
    EXPECT_THROW(engine.submit(too_long), std::invalid_argument);
}

}  // namespace
}  // namespace tf::engine
