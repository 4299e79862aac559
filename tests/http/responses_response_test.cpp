// ResponsesWriter: the reply of /v1/responses as output items, streamed as
// OpenAI's events and whole as the response object, from text alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "http/responses_response.h"

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

ResponsesReplySetup setup(ToolCallFormat tools = ToolCallFormat::none, ReasoningMarkers reasoning = {}) {
    ResponsesReplySetup s;
    s.id = "resp_1";
    s.model = "tinycode";
    s.created_at = 1700000000;
    s.echoed_json = R"({"instructions": null, "tools": [], "tool_choice": "auto"})";
    s.tool_format = tools;
    s.reasoning = std::move(reasoning);
    s.count_tokens = [](std::string_view text) { return static_cast<int64_t>(text.size()); };
    s.call_ids = [] { return std::string("call_x"); };
    int next = 0;
    s.item_ids = [next]() mutable { return std::to_string(++next); };
    return s;
}

// The whole stream of `pieces`, and the writer's body afterwards.
std::pair<std::vector<Event>, json> run(ResponsesWriter& writer, const std::vector<std::string>& pieces,
                                        ReplyOutcome outcome = {engine::FinishReason::stop_token, {}, 40, 30, 9}) {
    std::vector<std::string> raw = writer.open();
    for (const std::string& piece : pieces) {
        for (std::string& e : writer.feed(piece)) raw.push_back(std::move(e));
    }
    for (std::string& e : writer.finish(outcome)) raw.push_back(std::move(e));
    return {parse_events(raw), json::parse(writer.body())};
}

TEST(ResponsesWriter, ATextReplyIsOneMessageItemStreamedAsOutputTextDeltas) {
    ResponsesWriter writer(setup());
    const auto [events, body] = run(writer, {"Hello", ", world"});
    EXPECT_EQ(names(events),
              (std::vector<std::string>{"response.created", "response.in_progress", "response.output_item.added",
                                        "response.content_part.added", "response.output_text.delta",
                                        "response.output_text.delta", "response.output_text.done",
                                        "response.content_part.done", "response.output_item.done", "response.completed"}));
    for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].data["sequence_number"], i);
    EXPECT_EQ(events[0].data["response"]["status"], "in_progress");
    EXPECT_EQ(events[0].data["response"]["output"], json::array());
    EXPECT_EQ(events[4].data["delta"], "Hello");
    EXPECT_EQ(events[4].data["item_id"], "msg_1");
    EXPECT_EQ(events[4].data["output_index"], 0);
    EXPECT_EQ(events[4].data["content_index"], 0);
    EXPECT_EQ(events[6].data["text"], "Hello, world");

    EXPECT_EQ(body["id"], "resp_1");
    EXPECT_EQ(body["object"], "response");
    EXPECT_EQ(body["status"], "completed");
    EXPECT_EQ(body["created_at"], 1700000000);
    EXPECT_EQ(body["tool_choice"], "auto");
    ASSERT_EQ(body["output"].size(), 1u);
    const json& item = body["output"][0];
    EXPECT_EQ(item["type"], "message");
    EXPECT_EQ(item["role"], "assistant");
    EXPECT_EQ(item["status"], "completed");
    EXPECT_EQ(item["content"], json::parse(R"([{"type": "output_text", "text": "Hello, world", "annotations": [], "logprobs": []}])"));
    EXPECT_EQ(events.back().data["response"], body);
    EXPECT_EQ(events[8].data["item"], item);
}

TEST(ResponsesWriter, UsageCountsThePromptWholeWithItsCachedShare) {
    ResponsesWriter writer(setup());
    const auto [events, body] = run(writer, {"x"}, {engine::FinishReason::stop_token, {}, 40, 30, 9});
    EXPECT_EQ(body["usage"], json::parse(R"({"input_tokens": 40, "input_tokens_details": {"cached_tokens": 30},
        "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 49})"));
}

TEST(ResponsesWriter, ThoughtsAreAReasoningItemBeforeTheMessage) {
    ResponsesWriter writer(setup(ToolCallFormat::none, {"<think>", "</think>"}));
    const auto [events, body] = run(writer, {"<think>\nplan", " it</think>\n\n", "Answer"},
                                    {engine::FinishReason::stop_token, {}, 40, 0, 20});
    ASSERT_EQ(body["output"].size(), 2u);
    EXPECT_EQ(body["output"][0], json::parse(R"({"id": "rs_1", "type": "reasoning", "summary": [],
        "content": [{"type": "reasoning_text", "text": "plan it"}]})"));
    EXPECT_EQ(body["output"][1]["content"][0]["text"], "Answer");
    EXPECT_EQ(body["usage"]["output_tokens_details"]["reasoning_tokens"], 7);  // the counter here counts bytes
    std::string streamed;
    for (const Event& e : events) {
        if (e.name == "response.reasoning_text.delta") {
            EXPECT_EQ(e.data["output_index"], 0);
            streamed += e.data["delta"].get<std::string>();
        }
    }
    EXPECT_EQ(streamed, "plan it");
    const std::vector<std::string> all = names(events);
    EXPECT_NE(std::find(all.begin(), all.end(), "response.reasoning_text.done"), all.end());
}

TEST(ResponsesWriter, ACallIsAFunctionCallItemWhoseArgumentDeltasJoinToItsArguments) {
    ResponsesWriter writer(setup(ToolCallFormat::hermes));
    const auto [events, body] = run(writer, {"Sure.\n<tool_call>\n{\"name\": \"get_weather\", ",
                                             "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"});
    ASSERT_EQ(body["output"].size(), 2u);
    EXPECT_EQ(body["output"][0]["content"][0]["text"], "Sure.");
    const json& call = body["output"][1];
    EXPECT_EQ(call["type"], "function_call");
    EXPECT_EQ(call["id"], "fc_2");
    EXPECT_EQ(call["call_id"], "call_x");
    EXPECT_EQ(call["name"], "get_weather");
    EXPECT_EQ(call["status"], "completed");
    EXPECT_EQ(json::parse(call["arguments"].get<std::string>()), json::parse(R"({"city": "Oslo"})"));
    std::string joined;
    std::string done;
    for (const Event& e : events) {
        if (e.name == "response.function_call_arguments.delta") joined += e.data["delta"].get<std::string>();
        if (e.name == "response.function_call_arguments.done") done = e.data["arguments"];
        if (e.name.starts_with("response.function_call_arguments")) {
            EXPECT_EQ(e.data["output_index"], 1);
        }
    }
    EXPECT_EQ(joined, call["arguments"]);
    EXPECT_EQ(done, call["arguments"]);
}

TEST(ResponsesWriter, AReplyCutByTheTokenLimitIsIncomplete) {
    ResponsesWriter writer(setup());
    const auto [events, body] = run(writer, {"trunc"}, {engine::FinishReason::length, {}, 5, 0, 1});
    EXPECT_EQ(events.back().name, "response.incomplete");
    EXPECT_EQ(body["status"], "incomplete");
    EXPECT_EQ(body["incomplete_details"]["reason"], "max_output_tokens");
}

TEST(ResponsesWriter, AFailureMidStreamIsResponseFailedWithTheNextSequenceNumber) {
    ResponsesWriter writer(setup());
    std::vector<std::string> raw = writer.open();
    for (std::string& e : writer.feed("partial")) raw.push_back(std::move(e));
    raw.push_back(writer.error_event(ApiError(503, "the server stopped this request")));
    const std::vector<Event> events = parse_events(raw);
    const Event& failed = events.back();
    EXPECT_EQ(failed.name, "response.failed");
    EXPECT_EQ(failed.data["sequence_number"], events.size() - 1);
    EXPECT_EQ(failed.data["response"]["status"], "failed");
    EXPECT_EQ(failed.data["response"]["error"]["message"], "the server stopped this request");
    // Before a stream begins the error is OpenAI's usual body.
    EXPECT_EQ(json::parse(writer.error_body(bad_request("input", "input: bad")))["error"]["param"], "input");
}

}  // namespace
}  // namespace tf::http
