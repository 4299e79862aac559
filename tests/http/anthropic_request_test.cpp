// parse_messages_request: Anthropic's Messages body translated into the
// native ChatRequest that chat completions use.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http/anthropic_request.h"

namespace tf::http {
namespace {

using nlohmann::json;

MessagesRequest parse(const json& body, bool count_only = false) {
    return parse_messages_request(body.dump(), count_only);
}

json minimal() { return json::parse(R"({"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]})"); }

// The ApiError a body gets; fails the test when it parses.
ApiError rejection(const json& body, bool count_only = false) {
    try {
        parse(body, count_only);
    } catch (const ApiError& e) {
        return e;
    }
    ADD_FAILURE() << "accepted: " << body.dump();
    return ApiError(0, "");
}

TEST(AnthropicRequest, AStringSystemAndAUserStringBecomeTwoMessages) {
    json body = minimal();
    body["system"] = "You write Python.";
    const MessagesRequest r = parse(body);
    ASSERT_EQ(r.chat.messages.size(), 2u);
    EXPECT_EQ(r.chat.messages[0].role, "system");
    EXPECT_EQ(r.chat.messages[0].content, "You write Python.");
    EXPECT_EQ(r.chat.messages[1].role, "user");
    EXPECT_EQ(r.chat.messages[1].content, "hi");
    EXPECT_EQ(r.chat.model, "m");
    EXPECT_EQ(*r.chat.sampling.max_tokens, 16);
}

TEST(AnthropicRequest, SystemBlocksJoinWithABlankLineAndCacheControlIsIgnored) {
    json body = minimal();
    body["system"] = json::parse(R"([{"type": "text", "text": "billing: 1"},
        {"type": "text", "text": "You code.", "cache_control": {"type": "ephemeral"}}])");
    EXPECT_EQ(parse(body).chat.messages[0].content, "billing: 1\n\nYou code.");
}

// The parser keeps the system prompt as sent: Claude Code's billing line is
// set aside later, when the chat prompt is built, on every route alike
// (per_request_lines_test.cpp, and the route tests).
TEST(AnthropicRequest, TheSystemPromptIsKeptAsSentBillingLineIncluded) {
    json body = minimal();
    body["system"] = json::parse(R"([{"type": "text", "text": "x-anthropic-billing-header: cch=1;"},
        {"type": "text", "text": "You code."}])");
    EXPECT_EQ(parse(body).chat.messages[0].content, "x-anthropic-billing-header: cch=1;\n\nYou code.");
}

TEST(AnthropicRequest, AToolUseAndItsResultBecomeACallAndAToolMessageNamedAfterTheTool) {
    json body = minimal();
    body["messages"] = json::parse(R"([
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "use the tool", "signature": "x"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "21C"}]},
            {"type": "text", "text": "And tomorrow?"}]}])");
    const std::vector<ChatMessage>& m = parse(body).chat.messages;
    ASSERT_EQ(m.size(), 4u);
    EXPECT_EQ(m[1].role, "assistant");
    EXPECT_EQ(m[1].content, "Checking.");
    EXPECT_EQ(m[1].reasoning_content, "use the tool");
    ASSERT_EQ(m[1].tool_calls.size(), 1u);
    EXPECT_EQ(m[1].tool_calls[0].id, "toolu_1");
    EXPECT_EQ(m[1].tool_calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(m[1].tool_calls[0].arguments_json), json::parse(R"({"city": "Paris"})"));
    EXPECT_EQ(m[2].role, "tool");
    EXPECT_EQ(m[2].tool_call_id, "toolu_1");
    EXPECT_EQ(m[2].name, "get_weather");
    EXPECT_EQ(m[2].content, "21C");
    EXPECT_EQ(m[3].role, "user");
    EXPECT_EQ(m[3].content, "And tomorrow?");
}

TEST(AnthropicRequest, AFailedToolResultSaysSoInItsText) {
    json body = minimal();
    body["messages"] = json::parse(R"([{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "no such city", "is_error": true}]}])");
    EXPECT_EQ(parse(body).chat.messages[0].content, "Error: no such city");
}

TEST(AnthropicRequest, ToolsBecomeFunctionEntriesWithTheirSchemaInOrder) {
    // Written out as text: `json` would sort the schema's keys before the parser saw them.
    const MessagesRequest r = parse_messages_request(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
        "tools": [{"name": "get_weather", "description": "now",
        "input_schema": {"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "integer"}}}},
        {"type": "web_search_20250305", "name": "web_search"}]})");
    ASSERT_EQ(r.chat.tools.size(), 1u) << "Anthropic-defined tools are left out";
    EXPECT_EQ(r.chat.tools[0].name, "get_weather");
    // Key order kept: a forced call writes "z" before "a".
    EXPECT_LT(r.chat.tools[0].parameters_json.find("\"z\""), r.chat.tools[0].parameters_json.find("\"a\""));
    const json entry = json::parse(r.chat.tools[0].entry_json);
    EXPECT_EQ(entry["type"], "function");
    EXPECT_EQ(entry["function"]["name"], "get_weather");
    EXPECT_EQ(entry["function"]["description"], "now");
    EXPECT_EQ(r.chat.tool_choice.mode, ToolChoice::Mode::automatic);
}

TEST(AnthropicRequest, ToolChoiceMapsOntoTheNativeModes) {
    json body = minimal();
    body["tools"] = json::parse(R"([{"name": "f", "input_schema": {"type": "object"}}])");
    body["tool_choice"] = {{"type", "any"}};
    EXPECT_EQ(parse(body).chat.tool_choice.mode, ToolChoice::Mode::required);
    body["tool_choice"] = {{"type", "tool"}, {"name", "f"}};
    EXPECT_EQ(parse(body).chat.tool_choice.mode, ToolChoice::Mode::function);
    EXPECT_EQ(parse(body).chat.tool_choice.function, "f");
    body["tool_choice"] = {{"type", "none"}};
    EXPECT_EQ(parse(body).chat.tool_choice.mode, ToolChoice::Mode::none);
    body["tool_choice"] = {{"type", "tool"}, {"name", "g"}};
    EXPECT_NE(std::string(rejection(body).what()).find("tool_choice.name: 'g'"), std::string::npos);
}

TEST(AnthropicRequest, SamplingFieldsAndThinkingAreRead) {
    json body = minimal();
    body.update(json::parse(R"({"temperature": 0, "top_p": 0.5, "top_k": 7, "stop_sequences": ["\n\n"], "stream": true,
        "metadata": {"user_id": "u"}, "thinking": {"type": "enabled", "budget_tokens": 1024}, "seed": 42})"));
    const MessagesRequest r = parse(body);
    EXPECT_EQ(r.chat.sampling.seed, std::optional<uint64_t>{42});
    EXPECT_EQ(r.chat.sampling.temperature, 0.0f);
    EXPECT_EQ(r.chat.sampling.top_p, 0.5f);
    EXPECT_EQ(r.chat.sampling.top_k, 7);
    EXPECT_EQ(r.chat.sampling.stop, std::vector<std::string>{"\n\n"});
    EXPECT_TRUE(r.chat.sampling.stream);
    EXPECT_EQ(r.thinking, true);
    EXPECT_EQ(r.thinking_budget, 1024);
    ASSERT_EQ(r.chat.template_variables.size(), 1u);
    EXPECT_EQ(r.chat.template_variables[0], (std::pair<std::string, std::string>{"enable_thinking", "true"}));
}

TEST(AnthropicRequest, MaxTokensIsRequiredExceptWhenCounting) {
    json body = minimal();
    body.erase("max_tokens");
    const ApiError e = rejection(body);
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "max_tokens");
    EXPECT_NE(std::string(e.what()).find("max_tokens: required"), std::string::npos);
    EXPECT_FALSE(parse(body, /*count_only=*/true).chat.sampling.max_tokens);
}

TEST(AnthropicRequest, BadInputIsRefusedNamingTheField) {
    const auto message_of = [](json body) { return std::string(rejection(body).what()); };
    json body = minimal();
    body["messages"] = "hi";
    EXPECT_EQ(message_of(body).rfind("messages: expected an array", 0), 0u);
    body = minimal();
    body["messages"][0]["role"] = "system";
    EXPECT_EQ(message_of(body).rfind("messages[0].role: 'system' is not one of user, assistant", 0), 0u);
    body = minimal();
    body["seed"] = "seven";
    EXPECT_EQ(message_of(body).rfind("seed: expected an integer", 0), 0u) << message_of(body);
    body = minimal();
    body["messages"][0]["content"] = json::parse(R"([{"type": "image", "source": {}}])");
    EXPECT_EQ(message_of(body).rfind("messages[0].content[0].type: 'image' blocks are not supported", 0), 0u);
    body = minimal();
    body["temperature"] = 1.5;
    EXPECT_EQ(rejection(body).param, "temperature");
    body = minimal();
    body["messages"].push_back({{"role", "assistant"}, {"content", "The answer is"}});
    EXPECT_NE(message_of(body).find("prefill"), std::string::npos);
    body = minimal();
    body["tools"] = json::parse(R"([{"name": "f"}])");
    EXPECT_EQ(message_of(body).rfind("tools[0].input_schema: required", 0), 0u);
}

}  // namespace
}  // namespace tf::http
