// MessagesWriter, ReasoningStream and matched_stop_sequence: the reply of
// /v1/messages in Anthropic's shapes, streamed and whole, from text alone.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http/anthropic_response.h"

namespace tf::http {
namespace {

using nlohmann::json;

struct Event {
    std::string name;
    json data;
};

std::vector<Event> parse_events(const std::vector<std::string>& raw) {
    std::vector<Event> out;
    for (const std::string& e : raw) {
        EXPECT_TRUE(e.starts_with("event: ")) << e;
        EXPECT_TRUE(e.ends_with("\n\n")) << e;
        const size_t newline = e.find('\n');
        const std::string name = e.substr(7, newline - 7);
        EXPECT_EQ(e.substr(newline + 1, 6), "data: ") << e;
        out.push_back({name, json::parse(e.substr(newline + 7))});
        EXPECT_EQ(out.back().data["type"], name) << "the data's type repeats the event's name";
    }
    return out;
}

std::vector<std::string> names(const std::vector<Event>& events) {
    std::vector<std::string> out;
    for (const Event& e : events) out.push_back(e.name);
    return out;
}

MessagesReplySetup setup(ToolCallFormat tools = ToolCallFormat::none, ReasoningMarkers reasoning = {}) {
    MessagesReplySetup s;
    s.id = "msg_1";
    s.model = "claude-haiku-4-5";
    s.tool_format = tools;
    s.reasoning = std::move(reasoning);
    s.prompt_tokens = 40;
    s.tool_ids = [] { return std::string("toolu_x"); };
    return s;
}

// The whole stream of `pieces`, and the writer's body afterwards.
std::pair<std::vector<Event>, json> run(MessagesWriter& writer, const std::vector<std::string>& pieces,
                                        ReplyOutcome outcome = {engine::FinishReason::stop_token, {}, 40, 30, 9}) {
    std::vector<std::string> raw = writer.open();
    for (const std::string& piece : pieces) {
        for (std::string& e : writer.feed(piece)) raw.push_back(std::move(e));
    }
    for (std::string& e : writer.finish(outcome)) raw.push_back(std::move(e));
    return {parse_events(raw), json::parse(writer.body())};
}

TEST(MessagesWriter, TextStreamsAsOneBlockBetweenMessageStartAndStop) {
    MessagesWriter writer(setup());
    const auto [events, body] = run(writer, {"Hel", "lo"});
    EXPECT_EQ(names(events), (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                                       "content_block_delta", "content_block_stop", "message_delta",
                                                       "message_stop"}));
    EXPECT_EQ(events[0].data["message"]["usage"]["input_tokens"], 40);
    EXPECT_EQ(events[0].data["message"]["content"], json::array());
    EXPECT_EQ(events[1].data["index"], 0);
    EXPECT_EQ(events[1].data["content_block"], json::parse(R"({"type": "text", "text": ""})"));
    EXPECT_EQ(events[2].data["delta"], json::parse(R"({"type": "text_delta", "text": "Hel"})"));
    EXPECT_EQ(events[5].data["delta"]["stop_reason"], "end_turn");
    // Anthropic's usage: input_tokens are those read afresh, the rest cached.
    EXPECT_EQ(events[5].data["usage"], json::parse(R"({"input_tokens": 10, "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 30, "output_tokens": 9})"));
    EXPECT_EQ(body["id"], "msg_1");
    EXPECT_EQ(body["type"], "message");
    EXPECT_EQ(body["role"], "assistant");
    EXPECT_EQ(body["model"], "claude-haiku-4-5");
    EXPECT_EQ(body["content"], json::parse(R"([{"type": "text", "text": "Hello"}])"));
    EXPECT_EQ(body["stop_reason"], "end_turn");
    EXPECT_TRUE(body["stop_sequence"].is_null());
}

TEST(MessagesWriter, ThinkingTextAndAToolCallAreThreeBlocksInOrder) {
    MessagesWriter writer(setup(ToolCallFormat::hermes, {"<think>", "</think>"}));
    const auto [events, body] = run(writer, {"<think>\nplan", " it\n</th", "ink>\n\nCalling.\n<tool_call>\n",
                                             "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"});
    EXPECT_EQ(body["stop_reason"], "tool_use");
    ASSERT_EQ(body["content"].size(), 3u) << body;
    EXPECT_EQ(body["content"][0], json::parse(R"({"type": "thinking", "thinking": "plan it", "signature": ""})"));
    EXPECT_EQ(body["content"][1], json::parse(R"({"type": "text", "text": "Calling."})"));
    EXPECT_EQ(body["content"][2],
              json::parse(R"({"type": "tool_use", "id": "toolu_x", "name": "get_weather", "input": {"city": "Oslo"}})"));
    // Every block opens, has deltas of its kind at its index, and closes
    // before the next opens; the input_json_delta pieces spell the input.
    int64_t open = -1;
    int64_t next = 0;
    std::string input_json;
    for (const Event& e : events) {
        if (e.name == "content_block_start") {
            EXPECT_EQ(open, -1);
            EXPECT_EQ(e.data["index"], next);
            open = next++;
        } else if (e.name == "content_block_delta") {
            EXPECT_EQ(e.data["index"], open);
            const std::string type = e.data["delta"]["type"];
            const std::string expected = open == 0 ? "thinking_delta" : open == 1 ? "text_delta" : "input_json_delta";
            EXPECT_EQ(type, expected);
            if (type == "input_json_delta") input_json += e.data["delta"]["partial_json"].get<std::string>();
        } else if (e.name == "content_block_stop") {
            EXPECT_EQ(e.data["index"], open);
            open = -1;
        }
    }
    EXPECT_EQ(next, 3);
    EXPECT_EQ(json::parse(input_json), body["content"][2]["input"]);
}

TEST(MessagesWriter, MaxTokensAndStopSequencesAreTheirStopReasons) {
    MessagesWriter cut(setup());
    EXPECT_EQ(run(cut, {"abc"}, {engine::FinishReason::length, {}, 1, 0, 3}).second["stop_reason"], "max_tokens");
    MessagesWriter stopped(setup());
    const json body = run(stopped, {"abc"}, {engine::FinishReason::stop_string, "END", 1, 0, 3}).second;
    EXPECT_EQ(body["stop_reason"], "stop_sequence");
    EXPECT_EQ(body["stop_sequence"], "END");
}

TEST(MessagesWriter, AnEmptyReplyHasNoBlocks) {
    MessagesWriter writer(setup());
    const auto [events, body] = run(writer, {});
    EXPECT_EQ(names(events), (std::vector<std::string>{"message_start", "message_delta", "message_stop"}));
    EXPECT_EQ(body["content"], json::array());
}

TEST(AnthropicErrors, HaveAnthropicsShapeAndTypes) {
    EXPECT_EQ(json::parse(anthropic_error_body(bad_request("max_tokens", "max_tokens: required"))),
              json::parse(R"({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: required"}})"));
    EXPECT_EQ(json::parse(anthropic_error_body(ApiError(401, "k")))["error"]["type"], "authentication_error");
    EXPECT_EQ(json::parse(anthropic_error_body(ApiError(404, "m")))["error"]["type"], "not_found_error");
    EXPECT_EQ(json::parse(anthropic_error_body(ApiError(503, "busy")))["error"]["type"], "overloaded_error");
    EXPECT_EQ(json::parse(anthropic_error_body(ApiError(500, "x")))["error"]["type"], "api_error");
}

TEST(ReasoningStream, WithoutMarkersEverythingIsAnswerAsWritten) {
    ReasoningStream stream({}, false);
    const std::vector<ReplyPiece> pieces = stream.feed("  <think>x</think>");
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_FALSE(pieces[0].reasoning);
    EXPECT_EQ(pieces[0].text, "  <think>x</think>");
}

TEST(ReasoningStream, AMarkerLaterInTheReplyIsText) {
    ReasoningStream stream({"<think>", "</think>"}, false);
    std::vector<ReplyPiece> pieces = stream.feed("<th");
    EXPECT_TRUE(pieces.empty()) << "maybe the marker: held";
    pieces = stream.feed("e answer <think>");
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_FALSE(pieces[0].reasoning);
    EXPECT_EQ(pieces[0].text, "<the answer <think>");
}

TEST(ReasoningStream, APromptThatOpenedTheThoughtStartsInsideAndACutThoughtStaysAThought) {
    EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n", {"<think>", "</think>"}));
    ReasoningStream stream({"<think>", "</think>"}, true);
    std::vector<ReplyPiece> pieces = stream.feed("step one\n");
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_TRUE(pieces[0].reasoning);
    EXPECT_EQ(pieces[0].text, "step one");
    pieces = stream.finish();
    EXPECT_TRUE(pieces.empty()) << "trailing whitespace of a thought is dropped";
}

TEST(MatchedStopSequence, FindsTheStopWhereTheSentTextEnds) {
    EXPECT_EQ(matched_stop_sequence("abcEND", "abc", {"STOP", "END"}), "END");
    EXPECT_EQ(matched_stop_sequence("abcENDx", "ab", {"STOP", "END"}), "END");
    EXPECT_FALSE(matched_stop_sequence("abc", "abc", {"END"}));
}

}  // namespace
}  // namespace tf::http
