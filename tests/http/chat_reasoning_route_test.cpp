// POST /v1/chat/completions with a template that marks reasoning with
// <think>: the reply's thoughts come back as reasoning_content (and
// reasoning) apart from the content, whole and streamed as deltas, and
// tool calls after the thoughts are still found.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http/router.h"
#include "route_test_support.h"

namespace tf::http {
namespace {

using nlohmann::json;

// Qwen3's shape in small: it speaks of <think> ... </think> and of
// <tool_call>, and opens the assistant's turn plainly.
const std::string kThinkingTemplate =
    "{% if tools %}Call a tool as <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.reasoning_content %}<think>\n{{ m.reasoning_content }}\n</think>\n\n{% endif %}"
    "{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n";
// The same, but the generation prompt opens the thought itself.
const std::string kOpensThinkingTemplate = kThinkingTemplate + "<think>\n";
const std::string kPlainTemplate = "{% for m in messages %}{{ m.content }}{% endfor %}";

class ChatReasoningRoute : public ::testing::Test {
protected:
    std::shared_ptr<RecordingResponder> post(const json& body, const std::string& chat_template = kThinkingTemplate) {
        const tokenizer::Tokenizer tok = tinycode_with(chat_template);
        RouterOptions options;
        options.served_model_name = "m";
        options.ctx_size = 4096;
        options.vocab_size = tok.vocab_size();
        Router router(service_, tok, options);
        auto responder = std::make_shared<RecordingResponder>();
        router.handle({"POST", "/v1/chat/completions", "", "", body.dump()}, responder);
        return responder;
    }

    static json request(const json& extra = json::object()) {
        json body = json::parse(R"({"messages": [{"role": "user", "content": "2 + 2?"}], "max_tokens": 64})");
        body.update(extra);
        return body;
    }

    // The streamed chunks' deltas of one field, joined.
    static std::string joined(const RecordingResponder& r, const char* key) {
        std::string out;
        for (const json& chunk : r.chunks()) {
            if (chunk["choices"].empty()) continue;
            const json& delta = chunk["choices"][0]["delta"];
            if (delta.contains(key) && delta[key].is_string()) out += delta[key].get<std::string>();
        }
        return out;
    }

    ScriptedService service_;
};

TEST_F(ChatReasoningRoute, AWholeReplysThoughtsAreReasoningContentApartFromTheContent) {
    service_.scripts = {{"<think>\nadd them", "\n</think>\n\n4"}};
    const auto r = post(request());
    ASSERT_EQ(r->status, 200) << r->body;
    const json message = json::parse(r->body)["choices"][0]["message"];
    EXPECT_EQ(message["content"], "4");
    EXPECT_EQ(message["reasoning_content"], "add them");
    EXPECT_EQ(message["reasoning"], "add them");
}

TEST_F(ChatReasoningRoute, StreamedThoughtsAreReasoningDeltasBeforeTheContent) {
    service_.scripts = {{"<think>\nadd them", "\n</think>\n\n4"}};
    const auto r = post(request({{"stream", true}}));
    ASSERT_TRUE(r->ended);
    EXPECT_EQ(joined(*r, "reasoning_content"), "add them");
    EXPECT_EQ(joined(*r, "reasoning"), "add them");
    EXPECT_EQ(joined(*r, "content"), "4");
    // No chunk carries both: thoughts come first, then the answer.
    bool answer_seen = false;
    for (const json& chunk : r->chunks()) {
        const json& delta = chunk["choices"][0]["delta"];
        const bool has_content = delta.contains("content") && !delta["content"].get<std::string>().empty();
        if (has_content) answer_seen = true;
        if (delta.contains("reasoning_content")) {
            EXPECT_FALSE(answer_seen) << chunk.dump();
        }
    }
}

TEST_F(ChatReasoningRoute, APromptThatOpensTheThoughtIsReadAsInsideIt) {
    service_.scripts = {{"add them\n</think>\n\n4"}};
    const auto r = post(request(), kOpensThinkingTemplate);
    const json message = json::parse(r->body)["choices"][0]["message"];
    EXPECT_EQ(message["reasoning_content"], "add them");
    EXPECT_EQ(message["content"], "4");
}

TEST_F(ChatReasoningRoute, ACallAfterTheThoughtsIsStillAToolCall) {
    service_.scripts = {{"<think>\nuse the tool\n</think>\n\n",
                         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"}};
    const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
    const auto whole = post(request({{"tools", tools}}));
    const json message = json::parse(whole->body)["choices"][0]["message"];
    EXPECT_EQ(message["reasoning_content"], "use the tool");
    EXPECT_TRUE(message["content"].is_null());
    ASSERT_EQ(message["tool_calls"].size(), 1u);
    EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");

    const auto streamed = post(request({{"tools", tools}, {"stream", true}}));
    EXPECT_EQ(joined(*streamed, "reasoning_content"), "use the tool");
    EXPECT_EQ(joined(*streamed, "content"), "");
    std::string arguments;
    for (const json& chunk : streamed->chunks()) {
        const json& delta = chunk["choices"][0]["delta"];
        if (delta.contains("tool_calls")) arguments += delta["tool_calls"][0]["function"]["arguments"].get<std::string>();
    }
    EXPECT_EQ(json::parse(arguments), json::parse(R"({"city": "Paris"})"));
}

TEST_F(ChatReasoningRoute, WithoutMarkersInTheTemplateTheTextStaysContent) {
    service_.scripts = {{"<think>x</think>y"}};
    const json message = json::parse(post(request(), kPlainTemplate)->body)["choices"][0]["message"];
    EXPECT_EQ(message["content"], "<think>x</think>y");
    EXPECT_FALSE(message.contains("reasoning_content"));
}

TEST_F(ChatReasoningRoute, AReplyWithoutThoughtsHasNoReasoningField) {
    service_.scripts = {{"4"}};
    const json message = json::parse(post(request())->body)["choices"][0]["message"];
    EXPECT_EQ(message["content"], "4");
    EXPECT_FALSE(message.contains("reasoning_content"));
}

}  // namespace
}  // namespace tf::http
