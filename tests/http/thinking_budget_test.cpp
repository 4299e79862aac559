// Anthropic's thinking.budget_tokens as a cap (http/thinking_budget.h): on
// the real Qwen3 tokenizer, whose <think> and </think> are single tokens, a
// thought may run for the budget and then only </think> may follow; the
// answer after it is free. /v1/messages hands that constraint to the engine
// when thinking is enabled, and no constraint when it is not.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <stdexcept>

#include "engine/constraint.h"
#include "http/router.h"
#include "http/thinking_budget.h"
#include "route_test_support.h"

namespace tf::http {
namespace {

using nlohmann::json;

const ReasoningMarkers kThink{"<think>", "</think>"};

model::TokenId id_of(const char* text) { return static_cast<model::TokenId>(*qwen3().token_to_id(text)); }

// How many ids the state allows next (a whole vocabulary, or just one).
size_t allowed_count(const engine::ConstraintState& state) {
    std::vector<uint64_t> bits;
    state.allowed(bits);
    size_t n = 0;
    for (uint64_t word : bits) n += static_cast<size_t>(__builtin_popcountll(word));
    return n;
}

TEST(ThinkingBudget, AThoughtRunsForTheBudgetThenOnlyItsCloseMayFollow) {
    const auto vocab = static_cast<uint32_t>(qwen3().vocab_size());
    const auto budget = thinking_budget(qwen3(), kThink, /*starts_inside=*/false, 3, vocab);
    ASSERT_NE(budget, nullptr);
    const model::TokenId open = id_of("<think>"), close = id_of("</think>"), word = qwen3().encode("Hello")[0];
    auto state = budget->start();
    EXPECT_EQ(allowed_count(*state), vocab);
    ASSERT_TRUE(state->advance(open));
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(allowed_count(*state), vocab) << "thought token " << i;
        ASSERT_TRUE(state->advance(word));
    }
    // The budget is spent: the mask holds </think> alone, and a draft that
    // thinks on is refused.
    std::vector<uint64_t> bits;
    state->allowed(bits);
    EXPECT_EQ(allowed_count(*state), 1u);
    EXPECT_TRUE(engine::mask_allows(bits, close));
    auto copy = state->clone();
    EXPECT_FALSE(copy->advance(word));
    ASSERT_TRUE(state->advance(close));
    // The answer is free, however long, and a later <think> is only text.
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(state->advance(word));
    ASSERT_TRUE(state->advance(open));
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(state->advance(word));
    EXPECT_EQ(allowed_count(*state), vocab);
    EXPECT_FALSE(state->complete());
}

TEST(ThinkingBudget, APromptThatOpensTheThoughtCountsFromTheFirstToken) {
    const auto vocab = static_cast<uint32_t>(qwen3().vocab_size());
    const auto budget = thinking_budget(qwen3(), kThink, /*starts_inside=*/true, 2, vocab);
    ASSERT_NE(budget, nullptr);
    const model::TokenId word = qwen3().encode("Hello")[0];
    auto state = budget->start();
    ASSERT_TRUE(state->advance(word));
    ASSERT_TRUE(state->advance(word));
    EXPECT_EQ(allowed_count(*state), 1u);
    // A zero budget closes the thought at once.
    auto none = thinking_budget(qwen3(), kThink, true, 0, vocab)->start();
    EXPECT_EQ(allowed_count(*none), 1u);
}

TEST(ThinkingBudget, NoCapWhereTheMarkersAreNotSingleTokens) {
    const tokenizer::Tokenizer tiny = tinycode_with("{{ messages[0].content }}");
    EXPECT_EQ(thinking_budget(tiny, kThink, false, 8, static_cast<uint32_t>(tiny.vocab_size())), nullptr);
    EXPECT_EQ(thinking_budget(qwen3(), ReasoningMarkers{}, false, 8, static_cast<uint32_t>(qwen3().vocab_size())), nullptr);
}

TEST(ThinkingBudget, MessagesHandsTheCapToTheEngineOnlyWhenThinkingIsEnabled) {
    ScriptedService service;
    service.scripts = {{"<think>\nShort.\n</think>\n\nIt is 4."}};
    RouterOptions options;
    options.served_model_name = "qwen3";
    options.ctx_size = 4096;
    options.vocab_size = qwen3().vocab_size();
    Router router(service, qwen3(), options);
    auto post = [&](const json& thinking) {
        json body = {{"model", "qwen3"}, {"max_tokens", 64}, {"messages", {{{"role", "user"}, {"content", "2 + 2?"}}}}};
        if (!thinking.is_null()) body["thinking"] = thinking;
        auto responder = std::make_shared<RecordingResponder>();
        router.handle({"POST", "/v1/messages", "", "", body.dump()}, responder);
        EXPECT_EQ(responder->status, 200) << responder->body;
    };
    post({{"type", "enabled"}, {"budget_tokens", 1024}});
    post({{"type", "disabled"}});
    post(nullptr);
    ASSERT_EQ(service.submitted.size(), 3u);
    ASSERT_NE(service.submitted[0].constraint, nullptr);
    EXPECT_EQ(service.submitted[1].constraint, nullptr);
    EXPECT_EQ(service.submitted[2].constraint, nullptr);
    // The cap the engine got is the request's budget.
    auto state = service.submitted[0].constraint->start();
    const model::TokenId word = qwen3().encode("Hello")[0];
    ASSERT_TRUE(state->advance(id_of("<think>")));
    for (int i = 0; i < 1024; ++i) ASSERT_TRUE(state->advance(word)) << i;
    EXPECT_EQ(allowed_count(*state), 1u);
}

}  // namespace
}  // namespace tf::http
