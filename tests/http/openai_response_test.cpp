// Response bodies and SSE framing as OpenAI clients expect them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http/openai_response.h"

namespace tf::http {
namespace {

using nlohmann::json;

const ResponseHeader kHeader{"cmpl-1", 1700000000, "tinycode"};

TEST(CompletionBody, HasTheTextCompletionShape) {
    json body = json::parse(completion_body(kHeader, {{0, "return 1", "stop"}}, {5, 3}));
    EXPECT_EQ(body["object"], "text_completion");
    EXPECT_EQ(body["id"], "cmpl-1");
    EXPECT_EQ(body["model"], "tinycode");
    EXPECT_EQ(body["created"], 1700000000);
    EXPECT_EQ(body["choices"][0]["text"], "return 1");
    EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
    EXPECT_TRUE(body["choices"][0]["logprobs"].is_null());
    EXPECT_EQ(body["usage"]["prompt_tokens"], 5);
    EXPECT_EQ(body["usage"]["completion_tokens"], 3);
    EXPECT_EQ(body["usage"]["total_tokens"], 8);
    EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    const json cached = json::parse(completion_body(kHeader, {{0, "return 1", "stop"}}, {5, 3, 4}));
    EXPECT_EQ(cached["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
    EXPECT_EQ(cached["usage"]["prompt_tokens"], 5);
}

TEST(ChatBody, HasTheChatCompletionShape) {
    json body = json::parse(chat_body(kHeader, {{0, "hi", "length"}}, {2, 1}));
    EXPECT_EQ(body["object"], "chat.completion");
    EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
    EXPECT_EQ(body["choices"][0]["message"]["content"], "hi");
    EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
}

TEST(ChatChunk, FirstCarriesTheRoleLaterOnlyContent) {
    json first = json::parse(chat_chunk(kHeader, {0, "", std::nullopt}, true, false));
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
    EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
    EXPECT_FALSE(first.contains("usage"));
    json later = json::parse(chat_chunk(kHeader, {0, "x", std::nullopt}, false, true));
    EXPECT_FALSE(later["choices"][0]["delta"].contains("role"));
    EXPECT_EQ(later["choices"][0]["delta"]["content"], "x");
    EXPECT_TRUE(later.contains("usage"));
    EXPECT_TRUE(later["usage"].is_null());
    json last = json::parse(chat_chunk(kHeader, {0, "", "stop"}, false, false));
    EXPECT_TRUE(last["choices"][0]["delta"].empty());
    EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
}

TEST(UsageChunk, HasNoChoices) {
    json body = json::parse(usage_chunk(kHeader, true, {4, 6}));
    EXPECT_TRUE(body["choices"].empty());
    EXPECT_EQ(body["usage"]["total_tokens"], 10);
    EXPECT_EQ(body["object"], "chat.completion.chunk");
}

TEST(CompletionChunk, CarriesTextAndFinish) {
    json body = json::parse(completion_chunk(kHeader, {0, "abc", std::nullopt}, false));
    EXPECT_EQ(body["object"], "text_completion");
    EXPECT_EQ(body["choices"][0]["text"], "abc");
}

TEST(Sse, FramesEachEvent) {
    EXPECT_EQ(sse_event("{}"), "data: {}\n\n");
    EXPECT_STREQ(kSseDone, "data: [DONE]\n\n");
}

TEST(Bodies, InvalidUtf8IsReplacedNotThrown) {
    std::string broken = "ok\xE6\x97";
    json body = json::parse(completion_body(kHeader, {{0, broken, "length"}}, {1, 1}));
    EXPECT_EQ(body["choices"][0]["text"].get<std::string>().substr(0, 2), "ok");
}

// Without return_token_ids no body or chunk mentions token ids.
TEST(OpenAiTokenIdsResponse, AbsentByDefault) {
    const std::vector<std::string> texts = {
        completion_body(kHeader, {{0, "a", "stop"}}, {1, 1}), chat_body(kHeader, {{0, "a", "stop"}}, {1, 1}),
        completion_chunk(kHeader, {0, "a", std::nullopt}, false), chat_chunk(kHeader, {0, "a", std::nullopt}, false, false)};
    for (const std::string& text : texts) {
        EXPECT_EQ(text.find("token_ids"), std::string::npos) << text;
    }
}

TEST(OpenAiTokenIdsResponse, CompletionBodyCarriesReplyAndPromptIdsInTheChoice) {
    Choice choice{0, "ab", "length"};
    choice.token_ids = std::vector<int32_t>{7, 8};
    choice.prompt_token_ids = std::vector<int32_t>{1, 2, 3};
    json body = json::parse(completion_body(kHeader, {choice}, {3, 2}));
    EXPECT_EQ(body["choices"][0]["token_ids"], json({7, 8}));
    EXPECT_EQ(body["choices"][0]["prompt_token_ids"], json({1, 2, 3}));
    EXPECT_FALSE(body.contains("prompt_token_ids"));
}

TEST(OpenAiTokenIdsResponse, ChatBodyPutsThePromptIdsAtTheTopLevel) {
    Choice choice{0, "hi", "stop"};
    choice.token_ids = std::vector<int32_t>{5};
    choice.prompt_token_ids = std::vector<int32_t>{9, 9};
    json body = json::parse(chat_body(kHeader, {choice}, {2, 1}));
    EXPECT_EQ(body["choices"][0]["token_ids"], json({5}));
    EXPECT_FALSE(body["choices"][0].contains("prompt_token_ids"));
    EXPECT_EQ(body["prompt_token_ids"], json({9, 9}));
}

// A chunk carries the ids it adds, even when their text is still held back;
// chunks never carry the prompt's ids.
TEST(OpenAiTokenIdsResponse, ChunksCarryTheirOwnIds) {
    Choice choice{0, "", std::nullopt};
    choice.token_ids = std::vector<int32_t>{4, 5, 6};
    choice.prompt_token_ids = std::vector<int32_t>{1};
    json chunk = json::parse(completion_chunk(kHeader, choice, true));
    EXPECT_EQ(chunk["choices"][0]["token_ids"], json({4, 5, 6}));
    EXPECT_FALSE(chunk["choices"][0].contains("prompt_token_ids"));
    json chat = json::parse(chat_chunk(kHeader, choice, false, false));
    EXPECT_EQ(chat["choices"][0]["token_ids"], json({4, 5, 6}));
    EXPECT_FALSE(chat["choices"][0]["delta"].contains("content"));
    choice.token_ids = std::vector<int32_t>{};
    json empty = json::parse(chat_chunk(kHeader, choice, false, false));
    EXPECT_TRUE(empty["choices"][0]["token_ids"].is_array());
    EXPECT_TRUE(empty["choices"][0]["token_ids"].empty());
}

TEST(ChatBodyToolCalls, CallsWithoutTextHaveNullContent) {
    Choice choice{0, "", "tool_calls"};
    choice.tool_calls = {{"call_abc", "get_weather", R"({"city":"Paris"})"}};
    const json body = json::parse(chat_body(kHeader, {choice}, {2, 1}));
    const json& message = body["choices"][0]["message"];
    EXPECT_TRUE(message["content"].is_null());
    ASSERT_EQ(message["tool_calls"].size(), 1u);
    EXPECT_EQ(message["tool_calls"][0]["id"], "call_abc");
    EXPECT_EQ(message["tool_calls"][0]["type"], "function");
    EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris"})");  // a string, as OpenAI sends it
    EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
}

TEST(ChatBodyToolCalls, TextBesideCallsStaysContentAndNoCallsMeansNoField) {
    Choice choice{0, "Let me check.", "tool_calls"};
    choice.tool_calls = {{"call_abc", "f", "{}"}};
    EXPECT_EQ(json::parse(chat_body(kHeader, {choice}, {2, 1}))["choices"][0]["message"]["content"], "Let me check.");
    EXPECT_FALSE(json::parse(chat_body(kHeader, {{0, "hi", "stop"}}, {2, 1}))["choices"][0]["message"].contains("tool_calls"));
}

TEST(ChatToolCallChunk, OpensWithIdTypeAndNameThenCarriesArguments) {
    ReplyDelta opening;
    opening.is_tool_call = true;
    opening.index = 1;
    opening.opens = true;
    opening.id = "call_abc";
    opening.name = "get_weather";
    const json first = json::parse(chat_tool_call_chunk(kHeader, 2, opening, true));
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["index"], 2);
    EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
    EXPECT_TRUE(first.contains("usage") && first["usage"].is_null());
    EXPECT_EQ(first["choices"][0]["delta"]["tool_calls"],
              json::parse(R"([{"index":1,"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":""}}])"));
    ReplyDelta arguments;
    arguments.is_tool_call = true;
    arguments.index = 1;
    arguments.arguments = R"({"city":"Paris"})";
    const json later = json::parse(chat_tool_call_chunk(kHeader, 2, arguments, false));
    EXPECT_EQ(later["choices"][0]["delta"]["tool_calls"],
              json::parse(R"([{"index":1,"function":{"arguments":"{\"city\":\"Paris\"}"}}])"));
    EXPECT_FALSE(later.contains("usage"));
}

}  // namespace
}  // namespace tf::http

namespace tf::http {
namespace {

Choice with_logprobs(std::string text, std::optional<std::string> finish) {
    Choice choice{0, std::move(text), std::move(finish)};
    choice.logprobs = std::vector<LogprobEntry>{{"def", -0.25f, {{"def", -0.25f}, {"class", -1.5f}}},
                                                {" f\xc3", -2.0f, {{" f\xc3", -2.0f}, {" g", -2.5f}}}};
    choice.text_offset = 4;
    return choice;
}

TEST(Logprobs, CompletionsUseParallelListsWithOffsetsIntoTheText) {
    const json body = json::parse(completion_body(kHeader, {with_logprobs("# x\ndef f", "length")}, {1, 2}));
    const json& logprobs = body["choices"][0]["logprobs"];
    EXPECT_EQ(logprobs["tokens"], json::array({"def", " f\xef\xbf\xbd"})) << "a cut character is replaced, not thrown";
    EXPECT_EQ(logprobs["token_logprobs"], json::array({-0.25, -2.0}));
    EXPECT_EQ(logprobs["text_offset"], json::array({4, 7}));
    EXPECT_EQ(logprobs["top_logprobs"][0]["class"], -1.5);
    EXPECT_EQ(logprobs["top_logprobs"][1].size(), 2u);
}

TEST(Logprobs, ChatWritesOneEntryPerTokenWithItsBytes) {
    const json body = json::parse(chat_body(kHeader, {with_logprobs("def f", "stop")}, {1, 2}));
    const json& content = body["choices"][0]["logprobs"]["content"];
    ASSERT_EQ(content.size(), 2u);
    EXPECT_EQ(content[0]["token"], "def");
    EXPECT_EQ(content[0]["logprob"], -0.25);
    EXPECT_EQ(content[0]["bytes"], json::array({100, 101, 102}));
    EXPECT_EQ(content[1]["bytes"], json::array({32, 102, 0xc3})) << "bytes keep what the text cannot";
    EXPECT_EQ(content[0]["top_logprobs"][1]["token"], "class");
    EXPECT_EQ(content[0]["top_logprobs"][1]["logprob"], -1.5);
    const json chunk = json::parse(chat_chunk(kHeader, with_logprobs("def f", std::nullopt), false, false));
    EXPECT_EQ(chunk["choices"][0]["logprobs"]["content"].size(), 2u);
    EXPECT_TRUE(json::parse(chat_body(kHeader, {{0, "x", "stop"}}, {1, 1}))["choices"][0]["logprobs"].is_null());
}

}  // namespace
}  // namespace tf::http
