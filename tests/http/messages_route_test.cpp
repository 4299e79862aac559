// POST /v1/messages and /v1/messages/count_tokens through the real Router
// over a scripted service: the Anthropic body reaches the engine as the
// same prompt a chat completion renders, replies come back in Anthropic's
// shapes, and errors, keys and model names behave as Claude Code needs.
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

class MessagesRoute : public ::testing::Test {
protected:
    void SetUp() override {
        options_.served_model_name = "toolcode";
        options_.ctx_size = 4096;
        options_.vocab_size = tokenizer_.vocab_size();
    }

    std::shared_ptr<RecordingResponder> post(const std::string& path, const json& body, HttpRequest extra = {}) {
        Router router(service_, tokenizer_, options_);
        auto responder = std::make_shared<RecordingResponder>();
        extra.method = "POST";
        extra.path = path;
        extra.body = body.dump();
        router.handle(std::move(extra), responder);
        return responder;
    }

    static json request(const json& extra = json::object()) {
        json body = json::parse(R"({"model": "toolcode", "max_tokens": 64,
            "messages": [{"role": "user", "content": "Weather in Paris?"}],
            "tools": [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]})");
        body.update(extra);
        return body;
    }

    tokenizer::Tokenizer tokenizer_ = tinycode_with(kTemplate);
    RouterOptions options_;
    ScriptedService service_;
};

TEST_F(MessagesRoute, AReplyWithACallIsAToolUseBlock) {
    service_.scripts = {{"<tool_call>\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"}};
    const auto r = post("/v1/messages", request());
    ASSERT_EQ(r->status, 200) << r->body;
    const json body = json::parse(r->body);
    EXPECT_EQ(body["stop_reason"], "tool_use");
    ASSERT_EQ(body["content"].size(), 1u);
    EXPECT_EQ(body["content"][0]["type"], "tool_use");
    EXPECT_TRUE(body["content"][0]["id"].get<std::string>().starts_with("toolu_"));
    EXPECT_EQ(body["content"][0]["input"], json::parse(R"({"city": "Paris"})"));
    EXPECT_TRUE(body["id"].get<std::string>().starts_with("msg_"));
}

TEST_F(MessagesRoute, ThePromptIsTheOneChatCompletionsRenders) {
    service_.scripts = {{"ok"}};
    post("/v1/messages", request({{"system", "Be brief."}}));
    post("/v1/chat/completions", json::parse(R"({"messages": [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"}], "max_tokens": 64,
        "tools": [{"type": "function", "function": {"name": "get_weather",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]})"));
    ASSERT_EQ(service_.submitted.size(), 2u);
    EXPECT_EQ(service_.submitted[0].prompt, service_.submitted[1].prompt);
    EXPECT_EQ(service_.submitted[0].max_tokens, 64);
}

TEST_F(MessagesRoute, TheBillingLineDoesNotReachThePrompt) {
    service_.scripts = {{"ok"}};
    post("/v1/messages", request({{"system", "x-anthropic-billing-header: cc_version=2.0.14.abc; cch=1;\nBe brief."}}));
    post("/v1/messages", request({{"system", "x-anthropic-billing-header: cc_version=2.0.14.abc; cch=2;\nBe brief."}}));
    post("/v1/messages", request({{"system", "Be brief."}}));
    ASSERT_EQ(service_.submitted.size(), 3u);
    EXPECT_EQ(service_.submitted[0].prompt, service_.submitted[1].prompt);
    EXPECT_EQ(service_.submitted[0].prompt, service_.submitted[2].prompt);
}

// A bridge that turns Claude Code's requests into chat completions or
// Responses requests carries the billing line along: it is set aside there
// too, and count_tokens leaves it out of its count.
TEST_F(MessagesRoute, TheBillingLineIsSetAsideOnEveryChatRoute) {
    service_.scripts = {{"ok"}};
    const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
    post("/v1/messages", request({{"system", json::parse(R"([{"type": "text", "text": "x-anthropic-billing-header: cch=1;"},
                                                              {"type": "text", "text": "Be brief."}])")}}));
    post("/v1/chat/completions", {{"messages", {{{"role", "system"}, {"content", "x-anthropic-billing-header: cch=2;\nBe brief."}},
                                                {{"role", "user"}, {"content", "Weather in Paris?"}}}},
                                  {"max_tokens", 64}, {"tools", tools}});
    post("/v1/responses", {{"instructions", "x-anthropic-billing-header: cch=3;\nBe brief."}, {"input", "Weather in Paris?"},
                           {"max_output_tokens", 64}, {"tools", {{{"type", "function"}, {"name", "get_weather"},
                                                                  {"parameters", tools[0]["function"]["parameters"]}}}}});
    post("/v1/messages", request({{"system", "Be brief."}}));
    ASSERT_EQ(service_.submitted.size(), 4u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(service_.submitted[i].prompt, service_.submitted[3].prompt) << "request " << i;
    json count = request({{"system", "x-anthropic-billing-header: cch=4;\nBe brief."}});
    count.erase("max_tokens");
    EXPECT_EQ(json::parse(post("/v1/messages/count_tokens", count)->body)["input_tokens"], service_.submitted[3].prompt.size());
}

TEST_F(MessagesRoute, CountTokensIsThePromptsLength) {
    service_.scripts = {{"ok"}};
    json body = request();
    body.erase("max_tokens");
    const auto counted = post("/v1/messages/count_tokens", body);
    ASSERT_EQ(counted->status, 200) << counted->body;
    post("/v1/messages", request());
    EXPECT_EQ(json::parse(counted->body)["input_tokens"], service_.submitted.at(0).prompt.size());
}

TEST_F(MessagesRoute, AStreamIsAnthropicsEventSequence) {
    service_.scripts = {{"Hi", " there"}};
    const auto r = post("/v1/messages", request({{"stream", true}}));
    ASSERT_TRUE(r->ended);
    std::vector<std::string> names;
    for (const std::string& e : r->events) names.push_back(e.substr(7, e.find('\n') - 7));
    // The scripted service answers inside submit(), before the stream has
    // begun, so both pieces go out as one delta.
    EXPECT_EQ(names, (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                               "content_block_stop", "message_delta", "message_stop"}));
    EXPECT_NE(r->events[2].find(R"("text":"Hi there")"), std::string::npos) << r->events[2];
}

// The data of each event named `name` in a stream.
std::vector<json> event_data(const std::vector<std::string>& events, const std::string& name) {
    std::vector<json> out;
    for (const std::string& e : events) {
        if (e.starts_with("event: " + name + "\n")) out.push_back(json::parse(e.substr(e.find("data: ") + 6)));
    }
    return out;
}

TEST_F(MessagesRoute, ALlama3CallStreamsAsInputJsonDeltasOfAToolUseBlock) {
    tokenizer_ = tinycode_with("{% if tools %}Answer with {\"name\": ..., \"parameters\": ...} or <|python_tag|>{% endif %}"
                               "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}");
    service_.scripts = {{"{\"name\": \"get_weather\", \"parameters\": {\"city\": ", "\"Paris\"}}"}};
    const auto r = post("/v1/messages", request({{"stream", true}}));
    ASSERT_TRUE(r->ended);
    const std::vector<json> starts = event_data(r->events, "content_block_start");
    ASSERT_EQ(starts.size(), 1u);  // one block, the call: no text block beside it
    EXPECT_EQ(starts[0]["content_block"]["type"], "tool_use");
    EXPECT_EQ(starts[0]["content_block"]["name"], "get_weather");
    std::string partial_json;
    for (const json& delta : event_data(r->events, "content_block_delta")) {
        EXPECT_EQ(delta["delta"]["type"], "input_json_delta") << delta;
        partial_json += delta["delta"]["partial_json"].get<std::string>();
    }
    EXPECT_EQ(json::parse(partial_json), json::parse(R"({"city": "Paris"})"));
    EXPECT_EQ(event_data(r->events, "message_delta").at(0)["delta"]["stop_reason"], "tool_use");
}

TEST_F(MessagesRoute, ErrorsHaveAnthropicsShapeAndNameTheField) {
    json body = request();
    body.erase("max_tokens");
    const auto r = post("/v1/messages", body);
    EXPECT_EQ(r->status, 400);
    const json error = json::parse(r->body);
    EXPECT_EQ(error["type"], "error");
    EXPECT_EQ(error["error"]["type"], "invalid_request_error");
    EXPECT_NE(error["error"]["message"].get<std::string>().find("max_tokens"), std::string::npos);
}

TEST_F(MessagesRoute, AnUnknownModelIsANotFoundErrorUnlessAnAliasTakesIt) {
    const auto refused = post("/v1/messages", request({{"model", "claude-haiku-4-5"}}));
    EXPECT_EQ(refused->status, 404);
    EXPECT_EQ(json::parse(refused->body)["error"]["type"], "not_found_error");
    EXPECT_NE(refused->body.find("claude-haiku-4-5"), std::string::npos);
    service_.scripts = {{"ok"}};
    options_.model_aliases = {"*"};
    const auto served = post("/v1/messages", request({{"model", "claude-haiku-4-5"}}));
    ASSERT_EQ(served->status, 200) << served->body;
    EXPECT_EQ(json::parse(served->body)["model"], "claude-haiku-4-5");
}

TEST_F(MessagesRoute, TheKeyMayComeAsXApiKeyOrBearer) {
    service_.scripts = {{"ok"}};
    options_.api_key = "secret";
    HttpRequest with_header;
    with_header.x_api_key = "secret";
    EXPECT_EQ(post("/v1/messages", request(), with_header)->status, 200);
    HttpRequest bearer;
    bearer.authorization = "Bearer secret";
    EXPECT_EQ(post("/v1/messages", request(), bearer)->status, 200);
    HttpRequest wrong;
    wrong.x_api_key = "guess";
    const auto refused = post("/v1/messages", request(), wrong);
    EXPECT_EQ(refused->status, 401);
    EXPECT_EQ(json::parse(refused->body)["error"]["type"], "authentication_error");
}

}  // namespace
}  // namespace tf::http
