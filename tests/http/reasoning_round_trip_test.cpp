// A turn's reasoning and tool calls, sent back by the client as each route
// returned them, render in the next turn's prompt as the very ids the model
// generated, so the prompt cache (which resumes only an identical run of
// leading ids) resumes past the whole turn, reasoning included.
//
// Real Qwen3 tokenizer and chat template (the npm tokenizer fixtures that
// scripts/install-deps installs), the real Router and its parsers and
// writers; the scripted service stands in for the model, answering with the
// text a Qwen3 model writes. "Generated ids" are that text's ids plus the
// <|im_end|> that ends the turn, as the engine would have sampled them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "http/router.h"
#include "route_test_support.h"

namespace tf::http {
namespace {

using json = nlohmann::ordered_json;  // as a client keeps keys: in the order they came

// What the model writes on a turn that thinks, then calls a tool: Qwen3's
// own form, keys in the order it chose (not sorted).
const std::string kThoughtThenCall =
    "<think>\nThe user wants the weather; get_weather takes a city.\n</think>\n\n"
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"C\", \"city\": \"Paris\"}}\n</tool_call>";
const std::string kThoughtThenAnswer = "<think>\nTwo plus two.\n</think>\n\nIt is 4.";

const json kParameters = json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}})");

class ReasoningRoundTrip : public ::testing::Test {
protected:
    void SetUp() override {
        options_.served_model_name = "qwen3";
        options_.ctx_size = 4096;
        options_.vocab_size = qwen3().vocab_size();
    }

    json post(const std::string& path, const json& body) {
        Router router(service_, qwen3(), options_);
        auto responder = std::make_shared<RecordingResponder>();
        router.handle({"POST", path, "", "", body.dump()}, responder);
        EXPECT_EQ(responder->status, 200) << path << ": " << responder->body;
        return json::parse(responder->body);
    }

    // The ids the engine generated for the scripted `reply`: its text's
    // ids, then the end-of-turn token it stopped on.
    static std::vector<model::TokenId> generated_ids(const std::string& reply) {
        const std::vector<tokenizer::TokenId> text = qwen3().encode(reply, /*allow_special=*/true);
        std::vector<model::TokenId> ids(text.begin(), text.end());
        ids.push_back(*qwen3().token_to_id("<|im_end|>"));
        return ids;
    }

    // Whether request `next`'s prompt starts with request `turn`'s prompt
    // followed by all of `generated`; says where they part when not.
    ::testing::AssertionResult resumes_past_the_turn(size_t turn, size_t next, const std::vector<model::TokenId>& generated) {
        std::vector<model::TokenId> expected = service_.submitted.at(turn).prompt;
        expected.insert(expected.end(), generated.begin(), generated.end());
        const std::vector<model::TokenId>& prompt = service_.submitted.at(next).prompt;
        const auto [a, b] = std::mismatch(expected.begin(), expected.end(), prompt.begin(), prompt.end());
        if (a == expected.end()) return ::testing::AssertionSuccess();
        const auto at = static_cast<size_t>(a - expected.begin());
        std::vector<tokenizer::TokenId> rendered(prompt.begin() + static_cast<std::ptrdiff_t>(std::min(at, prompt.size())), prompt.end());
        return ::testing::AssertionFailure() << "the next prompt parts from the turn at id " << at << " of " << expected.size()
                                             << "; from there it reads: " << qwen3().decode(rendered);
    }

    RouterOptions options_;
    ScriptedService service_;
};

TEST_F(ReasoningRoundTrip, ChatCompletionsReasoningContentAndToolCallsSentBackAreTheGeneratedIds) {
    service_.scripts = {{kThoughtThenCall}, {"It is 21 degrees."}};
    const json tools = {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", kParameters}}}}};
    json body = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}, {"max_tokens", 64}, {"tools", tools}};
    const json first = post("/v1/chat/completions", body);
    json message = first["choices"][0]["message"];
    ASSERT_EQ(message["reasoning_content"], "The user wants the weather; get_weather takes a city.") << first;
    ASSERT_EQ(message["tool_calls"].size(), 1u) << first;
    // Sent back as an OpenAI client keeps it (the duplicate "reasoning" too).
    body["messages"].push_back(message);
    body["messages"].push_back({{"role", "tool"}, {"tool_call_id", message["tool_calls"][0]["id"]}, {"content", "21 C"}});
    post("/v1/chat/completions", body);
    EXPECT_TRUE(resumes_past_the_turn(0, 1, generated_ids(kThoughtThenCall)));
}

TEST_F(ReasoningRoundTrip, MessagesThinkingAndToolUseBlocksSentBackAreTheGeneratedIds) {
    service_.scripts = {{kThoughtThenCall}, {"It is 21 degrees."}};
    const json tools = {{{"name", "get_weather"}, {"input_schema", kParameters}}};
    json body = {{"model", "qwen3"}, {"max_tokens", 64}, {"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}},
                 {"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}, {"tools", tools}};
    const json first = post("/v1/messages", body);
    ASSERT_EQ(first["content"].size(), 2u) << first;
    ASSERT_EQ(first["content"][0]["type"], "thinking") << first;
    ASSERT_EQ(first["content"][1]["type"], "tool_use") << first;
    body["messages"].push_back({{"role", "assistant"}, {"content", first["content"]}});
    const json result = {{"type", "tool_result"}, {"tool_use_id", first["content"][1]["id"]}, {"content", "21 C"}};
    body["messages"].push_back({{"role", "user"}, {"content", json::array({result})}});
    post("/v1/messages", body);
    EXPECT_TRUE(resumes_past_the_turn(0, 1, generated_ids(kThoughtThenCall)));
}

TEST_F(ReasoningRoundTrip, ResponsesReasoningAndFunctionCallItemsSentBackAreTheGeneratedIds) {
    service_.scripts = {{kThoughtThenCall}, {"It is 21 degrees."}};
    const json tools = {{{"type", "function"}, {"name", "get_weather"}, {"parameters", kParameters}}};
    json body = {{"model", "qwen3"}, {"max_output_tokens", 64}, {"tools", tools},
                 {"input", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}};
    const json first = post("/v1/responses", body);
    ASSERT_EQ(first["output"].size(), 2u) << first;
    ASSERT_EQ(first["output"][0]["type"], "reasoning") << first;
    ASSERT_EQ(first["output"][1]["type"], "function_call") << first;
    // A stateless client (store: false) sends the output items back.
    for (const json& item : first["output"]) body["input"].push_back(item);
    body["input"].push_back({{"type", "function_call_output"}, {"call_id", first["output"][1]["call_id"]}, {"output", "21 C"}});
    post("/v1/responses", body);
    EXPECT_TRUE(resumes_past_the_turn(0, 1, generated_ids(kThoughtThenCall)));
}

// Where the template does not allow it: Qwen3's template shows the thoughts
// of the turns after the user's last message only, so once the user writes
// again, an earlier answer comes back without its <think> block. The prompt
// cache then resumes up to that answer's opening and reads the rest again;
// nothing the server renders can change what the template writes.
TEST_F(ReasoningRoundTrip, Qwen3DropsAThoughtOnceTheUserWritesAgainSoTheCacheResumesUpToThatTurn) {
    service_.scripts = {{kThoughtThenAnswer}, {"It is 6."}};
    json body = {{"messages", {{{"role", "user"}, {"content", "2 + 2?"}}}}, {"max_tokens", 64}};
    const json first = post("/v1/chat/completions", body);
    ASSERT_EQ(first["choices"][0]["message"]["reasoning_content"], "Two plus two.") << first;
    body["messages"].push_back(first["choices"][0]["message"]);
    body["messages"].push_back({{"role", "user"}, {"content", "And 3 + 3?"}});
    post("/v1/chat/completions", body);
    EXPECT_FALSE(resumes_past_the_turn(0, 1, generated_ids(kThoughtThenAnswer)));
    EXPECT_TRUE(resumes_past_the_turn(0, 1, {}));  // the earlier prompt, "<|im_start|>assistant\n" included
    const std::vector<model::TokenId>& next = service_.submitted.at(1).prompt;
    const std::vector<tokenizer::TokenId> ids(next.begin(), next.end());
    EXPECT_EQ(qwen3().decode(ids).find("<think>"), std::string::npos);
}

// Thinking switched off: Qwen3's generation prompt closes an empty thought
// ("<think>\n\n</think>\n\n") for the model to skip, but its template does
// not write that empty thought back in history, so the next prompt parts
// from the turn just there: its last four ids (the empty thought) and what
// the model wrote after them are read again.
TEST_F(ReasoningRoundTrip, Qwen3WithThinkingOffDoesNotWriteTheEmptyThoughtBack) {
    const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    service_.scripts = {{call}, {"It is 21 degrees."}};
    const json tools = {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", kParameters}}}}};
    json body = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}, {"max_tokens", 64}, {"tools", tools},
                 {"chat_template_kwargs", {{"enable_thinking", false}}}};
    const json first = post("/v1/chat/completions", body);
    json message = first["choices"][0]["message"];
    ASSERT_EQ(message["tool_calls"].size(), 1u) << first;
    body["messages"].push_back(message);
    body["messages"].push_back({{"role", "tool"}, {"tool_call_id", message["tool_calls"][0]["id"]}, {"content", "21 C"}});
    post("/v1/chat/completions", body);
    EXPECT_FALSE(resumes_past_the_turn(0, 1, generated_ids(call)));
    std::vector<model::TokenId> up_to_the_thought = service_.submitted.at(0).prompt;
    const std::vector<model::TokenId> empty_thought(up_to_the_thought.end() - 4, up_to_the_thought.end());
    EXPECT_EQ(empty_thought, (std::vector<model::TokenId>{151667, 271, 151668, 271}));  // <think> \n\n </think> \n\n
    up_to_the_thought.resize(up_to_the_thought.size() - 4);
    const std::vector<model::TokenId>& next = service_.submitted.at(1).prompt;
    ASSERT_GT(next.size(), up_to_the_thought.size());
    EXPECT_TRUE(std::equal(up_to_the_thought.begin(), up_to_the_thought.end(), next.begin()));
    EXPECT_NE(next[up_to_the_thought.size()], 151667);
}

}  // namespace
}  // namespace tf::http
