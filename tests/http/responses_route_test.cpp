// POST /v1/responses through the real Router over a scripted service: the
// body reaches the engine as the same prompt a chat completion renders,
// replies come back as output items, and errors are OpenAI's, naming the
// field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http/router.h"
#include "route_test_support.h"

namespace tf::http {
namespace {

using nlohmann::json;

const std::string kTemplate =
    "{% if tools %}Tools:{% for t in tools %} {{ t.function.name }}{% endfor %}. Call one as "
    "<tool_call>{\"name\": ..., \"arguments\": ...}</tool_call>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n";

class ResponsesRoute : public ::testing::Test {
protected:
    void SetUp() override {
        options_.served_model_name = "toolcode";
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

    static json request(const json& extra = json::object()) {
        json body = json::parse(R"({"model": "toolcode", "max_output_tokens": 64, "instructions": "Be brief.",
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}],
            "tools": [{"type": "function", "name": "get_weather",
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
                      {"type": "web_search"}]})");
        body.update(extra);
        return body;
    }

    tokenizer::Tokenizer tokenizer_ = tinycode_with(kTemplate);
    RouterOptions options_;
    ScriptedService service_;
};

TEST_F(ResponsesRoute, AReplyWithACallIsAFunctionCallItem) {
    service_.scripts = {{"<tool_call>\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"}};
    const auto r = post("/v1/responses", request());
    ASSERT_EQ(r->status, 200) << r->body;
    const json body = json::parse(r->body);
    EXPECT_TRUE(body["id"].get<std::string>().starts_with("resp_"));
    EXPECT_EQ(body["status"], "completed");
    EXPECT_EQ(body["model"], "toolcode");
    ASSERT_EQ(body["output"].size(), 1u);
    const json& call = body["output"][0];
    EXPECT_EQ(call["type"], "function_call");
    EXPECT_TRUE(call["call_id"].get<std::string>().starts_with("call_"));
    EXPECT_TRUE(call["id"].get<std::string>().starts_with("fc_"));
    EXPECT_EQ(json::parse(call["arguments"].get<std::string>()), json::parse(R"({"city": "Paris"})"));
    EXPECT_EQ(body["usage"]["input_tokens"], service_.submitted.at(0).prompt.size());
    EXPECT_EQ(body["instructions"], "Be brief.");
}

TEST_F(ResponsesRoute, ThePromptIsTheOneChatCompletionsRenders) {
    service_.scripts = {{"ok"}};
    post("/v1/responses", request());
    post("/v1/chat/completions", json::parse(R"({"messages": [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"}], "max_tokens": 64,
        "tools": [{"type": "function", "function": {"name": "get_weather",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]})"));
    ASSERT_EQ(service_.submitted.size(), 2u);
    EXPECT_EQ(service_.submitted[0].prompt, service_.submitted[1].prompt);
    EXPECT_EQ(service_.submitted[0].max_tokens, 64);
}

TEST_F(ResponsesRoute, TextFormatJsonSchemaConstrainsTheReply) {
    service_.scripts = {{"{\"city\": \"Paris\"}"}};
    json body = request({{"text", {{"format", {{"type", "json_schema"}, {"name", "place"},
        {"schema", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}}}});
    body.erase("tools");
    const auto r = post("/v1/responses", body);
    ASSERT_EQ(r->status, 200) << r->body;
    ASSERT_EQ(service_.submitted.size(), 1u);
    EXPECT_NE(service_.submitted[0].constraint, nullptr);
    EXPECT_EQ(json::parse(r->body)["text"]["format"]["name"], "place");
}

TEST_F(ResponsesRoute, AStreamEndsWithResponseCompleted) {
    service_.scripts = {{"Hi", " there"}};
    const auto r = post("/v1/responses", request({{"stream", true}}));
    ASSERT_TRUE(r->ended);
    ASSERT_FALSE(r->events.empty());
    EXPECT_TRUE(r->events.front().starts_with("event: response.created\n")) << r->events.front();
    EXPECT_TRUE(r->events.back().starts_with("event: response.completed\n")) << r->events.back();
    EXPECT_NE(r->events.back().find(R"("text":"Hi there")"), std::string::npos) << r->events.back();
}

TEST_F(ResponsesRoute, ALlama3CallStreamsAsFunctionCallArgumentsDeltas) {
    tokenizer_ = tinycode_with("{% if tools %}Answer with {\"name\": ..., \"parameters\": ...} or <|python_tag|>{% endif %}"
                               "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}");
    service_.scripts = {{"{\"name\": \"get_weather\", \"parameters\": {\"city\": ", "\"Paris\"}}"}};
    const auto r = post("/v1/responses", request({{"stream", true}}));
    ASSERT_TRUE(r->ended);
    std::string deltas, done;
    for (const std::string& e : r->events) {
        EXPECT_FALSE(e.starts_with("event: response.output_text.delta\n")) << "a call left in the text: " << e;
        const json data = json::parse(e.substr(e.find("data: ") + 6));
        if (e.starts_with("event: response.function_call_arguments.delta\n")) deltas += data["delta"].get<std::string>();
        if (e.starts_with("event: response.function_call_arguments.done\n")) done = data["arguments"];
    }
    EXPECT_EQ(done, "{\"city\": \"Paris\"}");
    EXPECT_EQ(deltas, done);
    EXPECT_TRUE(r->events.back().starts_with("event: response.completed\n")) << r->events.back();
}

TEST_F(ResponsesRoute, AStreamCutByTheServerStoppingEndsWithResponseFailed) {
    service_.scripts = {{"partial"}};
    service_.finish = engine::FinishReason::cancelled;
    const auto streamed = post("/v1/responses", request({{"stream", true}}));
    ASSERT_TRUE(streamed->ended);
    ASSERT_FALSE(streamed->events.empty());
    EXPECT_TRUE(streamed->events.back().starts_with("event: response.failed\n")) << streamed->events.back();
    const json failed = json::parse(streamed->events.back().substr(streamed->events.back().find("data: ") + 6));
    EXPECT_EQ(failed["response"]["status"], "failed");
    EXPECT_EQ(failed["response"]["error"]["code"], "server_error");
    // Not streaming: a 503 in OpenAI's shape.
    const auto whole = post("/v1/responses", request());
    EXPECT_EQ(whole->status, 503);
    EXPECT_EQ(json::parse(whole->body)["error"]["type"], "overloaded_error");
}

TEST_F(ResponsesRoute, ErrorsAreOpenAIsShapeNamingTheField) {
    const auto r = post("/v1/responses", request({{"previous_response_id", "resp_abc"}}));
    EXPECT_EQ(r->status, 400);
    const json error = json::parse(r->body)["error"];
    EXPECT_EQ(error["type"], "invalid_request_error");
    EXPECT_EQ(error["param"], "previous_response_id");
    EXPECT_NE(error["message"].get<std::string>().find("previous_response_id"), std::string::npos);
    EXPECT_TRUE(service_.submitted.empty());
}

TEST_F(ResponsesRoute, ALimitPastTheContextNamesMaxOutputTokens) {
    const auto r = post("/v1/responses", request({{"max_output_tokens", 5000}}));
    EXPECT_EQ(r->status, 400);
    const json error = json::parse(r->body)["error"];
    EXPECT_EQ(error["param"], "max_output_tokens");
    EXPECT_TRUE(error["message"].get<std::string>().starts_with("max_output_tokens: 5000")) << error;
}

TEST_F(ResponsesRoute, AnUnknownModelIsModelNotFound) {
    const auto r = post("/v1/responses", request({{"model", "gpt-5-codex"}}));
    EXPECT_EQ(r->status, 404);
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "model_not_found");
}

}  // namespace
}  // namespace tf::http
