// POST /v1/chat/completions with tools, through the real Router over a
// scripted service: each choice's reply is text the test chooses, so the
// tool calls in it (which tinycode would never write) reach the answer,
// whole and streamed, per choice.
#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "http/openai_response.h"
#include "http/router.h"
#include "route_test_support.h"

namespace tf::http {
namespace {

using nlohmann::json;

// A small template of our own in the hermes style: it reads `tools` and
// shows the model the <tool_call> form.
const std::string kHermesTemplate =
    "{% if tools %}Tools:{% for t in tools %} {{ t.function.name }}{% endfor %}. Call one as "
    "<tool_call>{\"name\": ..., \"arguments\": ...}</tool_call>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function.name }} {{ c.function.arguments | tojson }}"
    "</tool_call>{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}<|im_start|>assistant\n";
const std::string kPlainTemplate = "{% for m in messages %}{{ m.content }}{% endfor %}";
// Llama 3 style: tool results come back in the ipython role.
const std::string kLlama3Template =
    "{% if tools %}Answer with {\"name\": ..., \"parameters\": ...} to call one of: {{ tools | tojson }}{% endif %}"
    "{% for m in messages %}{{ 'ipython' if m.role == 'tool' else m.role }}: {{ m.content }}\n{% endfor %}";
// Reads tools but shows no call form tensorfold knows.
const std::string kToolsWithoutAFormTemplate = "{{ tools | length }} tools. {% for m in messages %}{{ m.content }}{% endfor %}";

const std::string kCall = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

class ChatToolsRoute : public ::testing::Test {
protected:
    json post(const json& body, const std::string& chat_template = kHermesTemplate) {
        const tokenizer::Tokenizer tok = tinycode_with(chat_template);
        RouterOptions options;
        options.served_model_name = "toolcode";
        options.ctx_size = 4096;
        options.vocab_size = tok.vocab_size();
        Router router(service_, tok, options);
        responder_ = std::make_shared<RecordingResponder>();
        router.handle({"POST", "/v1/chat/completions", "", "", body.dump()}, responder_);
        if (!responder_->events.empty()) return json();
        return json::parse(responder_->body);
    }

    static json request(const json& extra = json::object()) {
        json body = json::parse(R"({"messages": [{"role": "user", "content": "Weather in Paris?"}], "max_tokens": 64,
            "tools": [{"type": "function", "function": {"name": "get_weather",
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]})");
        body.update(extra);
        return body;
    }

    ScriptedService service_;
    std::shared_ptr<RecordingResponder> responder_;
};

TEST_F(ChatToolsRoute, AReplyThatCallsAToolAnswersToolCalls) {
    service_.scripts = {{kCall}};
    const json body = post(request());
    ASSERT_EQ(responder_->status, 200) << body;
    const json& choice = body["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls");
    EXPECT_TRUE(choice["message"]["content"].is_null());
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
    const json& call = choice["message"]["tool_calls"][0];
    EXPECT_EQ(call["id"].get<std::string>().size(), 29u);
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["function"]["name"], "get_weather");
    EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));
}

TEST_F(ChatToolsRoute, TheToolsReachTheTemplate) {
    service_.scripts = {{"ok"}};
    post(request());
    ASSERT_EQ(service_.submitted.size(), 1u);
    const tokenizer::Tokenizer tok = tinycode_with(kHermesTemplate);
    const std::vector<tokenizer::TokenId> prompt(service_.submitted[0].prompt.begin(), service_.submitted[0].prompt.end());
    EXPECT_EQ(tok.decode(prompt).rfind("Tools: get_weather. Call one as <tool_call>", 0), 0u) << tok.decode(prompt);
}

TEST_F(ChatToolsRoute, AReplyWithoutCallsIsContentAndStop) {
    service_.scripts = {{"It is ", "sunny."}};
    const json body = post(request());
    EXPECT_EQ(body["choices"][0]["message"]["content"], "It is sunny.");
    EXPECT_FALSE(body["choices"][0]["message"].contains("tool_calls"));
    EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
}

TEST_F(ChatToolsRoute, ACallCutByMaxTokensIsContentAndLength) {
    service_.scripts = {{"<tool_call>\n{\"name\": \"get_weather\", \"argu"}};
    service_.finish = engine::FinishReason::length;
    const json body = post(request());
    EXPECT_EQ(body["choices"][0]["message"]["content"], "<tool_call>\n{\"name\": \"get_weather\", \"argu");
    EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
}

TEST_F(ChatToolsRoute, ToolChoiceNoneLeavesTheReplyAsWritten) {
    service_.scripts = {{kCall}};
    const json body = post(request({{"tool_choice", "none"}}));
    EXPECT_EQ(body["choices"][0]["message"]["content"], kCall);
    EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
}

TEST_F(ChatToolsRoute, EachOfNChoicesIsParsedOnItsOwn) {
    service_.scripts = {{"Let me look.\n", kCall}, {"No tools needed."}};
    const json body = post(request({{"n", 2}}));
    ASSERT_EQ(body["choices"].size(), 2u);
    EXPECT_EQ(body["choices"][0]["message"]["content"], "Let me look.");
    EXPECT_EQ(body["choices"][0]["message"]["tool_calls"].size(), 1u);
    EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
    EXPECT_EQ(body["choices"][1]["message"]["content"], "No tools needed.");
    EXPECT_FALSE(body["choices"][1]["message"].contains("tool_calls"));
    EXPECT_EQ(body["choices"][1]["finish_reason"], "stop");
}

TEST_F(ChatToolsRoute, AStreamSendsContentThenTheCallInPiecesAndFinishesWithToolCalls) {
    // The call arrives cut in odd places, its opening tag too.
    service_.scripts = {{"Let me look.\n<tool", "_call>\n{\"name\": \"get_", "weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
                        {"Plain ", "answer."}};
    post(request({{"stream", true}, {"n", 2}}));
    ASSERT_TRUE(responder_->ended);
    EXPECT_EQ(responder_->events.back(), kSseDone);
    std::string content[2];
    std::string arguments;
    std::string finish[2];
    int openings = 0;
    for (const json& chunk : responder_->chunks()) {
        EXPECT_EQ(chunk["object"], "chat.completion.chunk");
        const json& choice = chunk["choices"][0];
        const int index = choice["index"];
        const json& delta = choice["delta"];
        if (delta.contains("content")) content[index] += delta["content"].get<std::string>();
        if (delta.contains("tool_calls")) {
            ASSERT_EQ(index, 0);
            const json& call = delta["tool_calls"][0];
            EXPECT_EQ(call["index"], 0);
            if (call.contains("id")) {
                ++openings;
                EXPECT_EQ(call["type"], "function");
                EXPECT_EQ(call["function"]["name"], "get_weather");
            }
            arguments += call["function"]["arguments"].get<std::string>();
        }
        if (!choice["finish_reason"].is_null()) finish[index] = choice["finish_reason"];
    }
    EXPECT_EQ(content[0], "Let me look.");
    EXPECT_EQ(openings, 1);
    EXPECT_EQ(json::parse(arguments), json({{"city", "Paris"}}));
    EXPECT_EQ(finish[0], "tool_calls");
    EXPECT_EQ(content[1], "Plain answer.");
    EXPECT_EQ(finish[1], "stop");
}

TEST_F(ChatToolsRoute, HistoryWithAToolCallAndItsResultRenders) {
    service_.scripts = {{"It is 21 degrees."}};
    json body = request();
    body["messages"].push_back({{"role", "assistant"},
                                {"content", nullptr},
                                {"tool_calls", {{{"id", "call_1"},
                                                 {"type", "function"},
                                                 {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}});
    body["messages"].push_back({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "21 C"}});
    const json answer = post(body);
    ASSERT_EQ(responder_->status, 200) << answer;
    const tokenizer::Tokenizer tok = tinycode_with(kHermesTemplate);
    const std::vector<tokenizer::TokenId> prompt(service_.submitted[0].prompt.begin(), service_.submitted[0].prompt.end());
    // The arguments reach the template as an object, not a quoted string.
    EXPECT_NE(tok.decode(prompt).find("<tool_call>get_weather {\"city\": \"Paris\"}</tool_call>"), std::string::npos)
        << tok.decode(prompt);
    EXPECT_NE(tok.decode(prompt).find("<|im_start|>tool\n21 C<|im_end|>"), std::string::npos);
}

TEST_F(ChatToolsRoute, ATemplateThatDoesNotReadToolsRefusesThem) {
    const json body = post(request(), kPlainTemplate);
    EXPECT_EQ(responder_->status, 400);
    EXPECT_EQ(body["error"]["param"], "tools");
    EXPECT_EQ(body["error"]["message"], "tools: the model's chat template does not accept tools");
    EXPECT_TRUE(service_.submitted.empty());
}

TEST_F(ChatToolsRoute, ForcedCallsAreConstrainedAndRefusedBesideAResponseFormat) {
    service_.scripts = {{kCall}};
    for (const json& choice : {json("required"), json{{"type", "function"}, {"function", {{"name", "get_weather"}}}}}) {
        const json body = post(request({{"tool_choice", choice}}));
        EXPECT_EQ(responder_->status, 200) << body;
        ASSERT_FALSE(service_.submitted.empty());
        EXPECT_NE(service_.submitted.back().constraint, nullptr) << "a forced call is a constrained reply";
    }
    const size_t submitted = service_.submitted.size();
    const json both = post(request({{"tool_choice", "required"}, {"response_format", {{"type", "json_object"}}}}));
    EXPECT_EQ(responder_->status, 400);
    EXPECT_EQ(both["error"]["param"], "tool_choice");
    EXPECT_EQ(service_.submitted.size(), submitted);
    EXPECT_EQ(post(request({{"tool_choice", "auto"}}))["choices"][0]["finish_reason"], "tool_calls");
    EXPECT_EQ(service_.submitted.back().constraint, nullptr) << "auto leaves the model free";
}

TEST_F(ChatToolsRoute, ALlama3TemplateHasItsWholeJsonReplyReadAsACall) {
    service_.scripts = {{"{\"name\": \"get_weather\", ", "\"parameters\": {\"city\": \"Paris\"}}"}};
    const json body = post(request(), kLlama3Template);
    ASSERT_EQ(responder_->status, 200) << body;
    EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
    ASSERT_EQ(body["choices"][0]["message"]["tool_calls"].size(), 1u);
    // The arguments as the model wrote them.
    EXPECT_EQ(body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Paris\"}");
}

TEST_F(ChatToolsRoute, ALlama3CallStreamsAsToolCallDeltasWithNothingInContent) {
    service_.scripts = {{"<|python_tag|>{\"name\": \"get_", "weather\", \"parameters\": {\"city\": ", "\"Paris\"}}"}};
    post(request({{"stream", true}}), kLlama3Template);
    ASSERT_TRUE(responder_->ended);
    std::string content, arguments, finish;
    int openings = 0;
    for (const json& chunk : responder_->chunks()) {
        const json& choice = chunk["choices"][0];
        if (choice["delta"].contains("content") && choice["delta"]["content"].is_string()) content += choice["delta"]["content"];
        if (choice["delta"].contains("tool_calls")) {
            const json& call = choice["delta"]["tool_calls"][0];
            EXPECT_EQ(call["index"], 0);
            if (call.contains("id")) {
                ++openings;
                EXPECT_EQ(call["function"]["name"], "get_weather");
            }
            arguments += call["function"]["arguments"].get<std::string>();
        }
        if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
    }
    EXPECT_EQ(content, "");  // the role chunk's empty content only
    EXPECT_EQ(openings, 1);
    EXPECT_EQ(arguments, "{\"city\": \"Paris\"}");  // the pieces join to the model's own text
    EXPECT_EQ(finish, "tool_calls");
}

TEST_F(ChatToolsRoute, ATemplateWithoutAKnownCallFormAnswersContentAndCannotForce) {
    service_.scripts = {{kCall}};
    const json body = post(request(), kToolsWithoutAFormTemplate);
    EXPECT_EQ(body["choices"][0]["message"]["content"], kCall);
    const json forced = post(request({{"tool_choice", "required"}}), kToolsWithoutAFormTemplate);
    EXPECT_EQ(responder_->status, 400);
    EXPECT_NE(forced["error"]["message"].get<std::string>().find("no tool-call format"), std::string::npos) << forced;
}

}  // namespace
}  // namespace tf::http
