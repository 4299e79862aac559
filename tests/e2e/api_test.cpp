// The OpenAI-compatible routes of the real `tensorfold serve` on tinycode,
// over a loopback socket: answers, SSE framing, auth and errors.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;

const std::string kPrompt = "def fibonacci(n):\n";

std::string completion(const json& extra = {}) {
    json body = {{"model", "tinycode"}, {"prompt", kPrompt}, {"max_tokens", 16}, {"temperature", 0}};
    if (extra.is_object()) body.update(extra);
    return body.dump();
}

// The JSON payloads of an SSE body ("data: {...}\n\n" ... "data: [DONE]\n\n").
std::vector<std::string> sse_payloads(const std::string& body) {
    std::vector<std::string> payloads;
    size_t at = 0;
    while (at < body.size()) {
        const size_t end = body.find("\n\n", at);
        if (end == std::string::npos) break;
        const std::string event = body.substr(at, end - at);
        EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
        payloads.push_back(event.substr(6));
        at = end + 2;
    }
    EXPECT_EQ(at, body.size()) << "trailing bytes after the last event: " << body.substr(at);
    return payloads;
}

void expect_error(const Response& r, int status, const std::string& needle) {
    EXPECT_EQ(r.status, status) << r.body;
    const json body = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << r.body;
    ASSERT_TRUE(body.contains("error")) << r.body;
    EXPECT_TRUE(body["error"]["message"].is_string());
    EXPECT_TRUE(body["error"]["type"].is_string());
    EXPECT_EQ(body["error"]["code"], status);
    EXPECT_NE(body["error"]["message"].get<std::string>().find(needle), std::string::npos) << r.body;
    EXPECT_EQ(r.headers.at("content-type"), "application/json");
}

class Api : public ::testing::Test {
protected:
    static void SetUpTestSuite() { server_ = new ServerProcess({"--ctx-size", "256"}); }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override { ASSERT_TRUE(server_->listening()) << server_->output(); }
    static ServerProcess* server_;
};
ServerProcess* Api::server_ = nullptr;

TEST_F(Api, HealthAnswersOk) {
    const Response r = server_->get("/health");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(json::parse(r.body)["status"], "ok");
}

TEST_F(Api, ModelsListsTheServedModelUnderTheDirectoryName) {
    const json body = json::parse(server_->get("/v1/models").body);
    EXPECT_EQ(body["object"], "list");
    ASSERT_EQ(body["data"].size(), 1u);
    EXPECT_EQ(body["data"][0]["id"], "tinycode");
    EXPECT_EQ(body["data"][0]["object"], "model");
    EXPECT_EQ(body["data"][0]["max_model_len"], 256);
}

TEST_F(Api, CompletionAnswersTextUsageAndFinishReason) {
    const Response r = server_->post("/v1/completions", completion());
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = json::parse(r.body);
    EXPECT_EQ(body["object"], "text_completion");
    EXPECT_EQ(body["id"].get<std::string>().rfind("cmpl-", 0), 0u);
    EXPECT_EQ(body["model"], "tinycode");
    ASSERT_EQ(body["choices"].size(), 1u);
    EXPECT_EQ(body["choices"][0]["index"], 0);
    EXPECT_FALSE(body["choices"][0]["text"].get<std::string>().empty());
    const std::string finish = body["choices"][0]["finish_reason"];
    EXPECT_TRUE(finish == "length" || finish == "stop") << finish;
    EXPECT_GT(body["usage"]["prompt_tokens"].get<int>(), 3);
    EXPECT_LE(body["usage"]["completion_tokens"].get<int>(), 16);
    EXPECT_GE(body["usage"]["completion_tokens"].get<int>(), 1);
    EXPECT_EQ(body["usage"]["total_tokens"].get<int>(),
              body["usage"]["prompt_tokens"].get<int>() + body["usage"]["completion_tokens"].get<int>());
}

TEST_F(Api, MaxTokensEndsTheReplyWithLength) {
    // tinycode does not end a function body within 4 tokens.
    const json body = json::parse(server_->post("/v1/completions", completion({{"max_tokens", 4}})).body);
    EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(body["usage"]["completion_tokens"], 4);
}

TEST_F(Api, GreedyRepliesRepeat) {
    const json a = json::parse(server_->post("/v1/completions", completion()).body);
    const json b = json::parse(server_->post("/v1/completions", completion()).body);
    EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
}

TEST_F(Api, TheSameSeedGivesTheSameSampledReplyAndNoSeedARandomOne) {
    const std::string seeded = completion({{"temperature", 1.0}, {"seed", 1234}, {"max_tokens", 24}});
    const json a = json::parse(server_->post("/v1/completions", seeded).body);
    const json b = json::parse(server_->post("/v1/completions", seeded).body);
    EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
    // Requests without a seed get a random one: four unseeded replies at
    // temperature 1.5 are not all the same.
    std::set<std::string> replies;
    for (int i = 0; i < 4; ++i) {
        const json r = json::parse(server_->post("/v1/completions", completion({{"temperature", 1.5}, {"max_tokens", 24}})).body);
        replies.insert(r["choices"][0]["text"].get<std::string>());
    }
    EXPECT_GT(replies.size(), 1u);
}

TEST_F(Api, AListOfPromptsGetsOneChoiceEach) {
    const json prompts = {kPrompt, "class Stack:\n", "import os\n"};
    const json body = json::parse(server_->post("/v1/completions", completion({{"prompt", prompts}, {"max_tokens", 8}})).body);
    ASSERT_EQ(body["choices"].size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(body["choices"][i]["index"], i);
    // Each choice is the reply its prompt gets alone.
    const json alone = json::parse(server_->post("/v1/completions", completion({{"prompt", "class Stack:\n"}, {"max_tokens", 8}})).body);
    EXPECT_EQ(body["choices"][1]["text"], alone["choices"][0]["text"]);
}

TEST_F(Api, TokenIdPromptsAnswerLikeTheirText) {
    // tensorfold tokenize gives the ids of the text prompt.
    // (the heredoc's final newline is the prompt's "\n").
    const std::string ids_text = shell(binary() + " tokenize " + tinycode_dir() + " <<'EOF'\nimport os\nEOF");
    const json ids = json::parse(ids_text, nullptr, false);
    ASSERT_TRUE(ids.is_array()) << ids_text;
    ASSERT_FALSE(ids.empty());
    const json by_ids = json::parse(server_->post("/v1/completions", completion({{"prompt", ids}, {"max_tokens", 8}})).body);
    const json by_text = json::parse(server_->post("/v1/completions", completion({{"prompt", "import os\n"}, {"max_tokens", 8}})).body);
    EXPECT_EQ(by_ids["choices"][0]["text"], by_text["choices"][0]["text"]);
    EXPECT_EQ(by_ids["usage"]["prompt_tokens"], ids.size());
    // A list of token-id arrays: one choice each.
    const json lists = json::parse(server_->post("/v1/completions", completion({{"prompt", json::array({ids, ids})}, {"max_tokens", 4}})).body);
    EXPECT_EQ(lists["choices"].size(), 2u);
}

TEST_F(Api, EchoPrependsThePrompt) {
    const json plain = json::parse(server_->post("/v1/completions", completion()).body);
    const json echoed = json::parse(server_->post("/v1/completions", completion({{"echo", true}})).body);
    EXPECT_EQ(echoed["choices"][0]["text"], kPrompt + plain["choices"][0]["text"].get<std::string>());
}

TEST_F(Api, StopStringsEndTheReplyBeforeThem) {
    const json plain = json::parse(server_->post("/v1/completions", completion({{"max_tokens", 32}})).body);
    const std::string text = plain["choices"][0]["text"];
    ASSERT_GT(text.size(), 6u) << text;
    const std::string stop = text.substr(3, 2);
    const json stopped = json::parse(server_->post("/v1/completions", completion({{"max_tokens", 32}, {"stop", stop}})).body);
    EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(stopped["choices"][0]["text"], text.substr(0, text.find(stop)));
}

TEST_F(Api, StreamedCompletionIsSseChunksThenDone) {
    const Response r = server_->post("/v1/completions", completion({{"stream", true}}));
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.headers.at("content-type"), "text/event-stream");
    const std::vector<std::string> payloads = sse_payloads(r.body);
    ASSERT_GE(payloads.size(), 3u);
    EXPECT_EQ(payloads.back(), "[DONE]");
    std::string text;
    std::string finish;
    for (size_t i = 0; i + 1 < payloads.size(); ++i) {
        const json chunk = json::parse(payloads[i]);
        EXPECT_EQ(chunk["object"], "text_completion");
        EXPECT_FALSE(chunk.contains("usage")) << "usage only with stream_options.include_usage";
        text += chunk["choices"][0]["text"].get<std::string>();
        if (!chunk["choices"][0]["finish_reason"].is_null()) finish = chunk["choices"][0]["finish_reason"];
    }
    const json whole = json::parse(server_->post("/v1/completions", completion()).body);
    EXPECT_EQ(text, whole["choices"][0]["text"]);
    EXPECT_EQ(finish, whole["choices"][0]["finish_reason"]);
}

// n choices: choice j is what a request with n = 1 and seed + j answers.
TEST_F(Api, NChoicesEachRepeatTheirOwnSeedAlone) {
    const json sampled = {{"temperature", 0.9}, {"seed", 41}, {"max_tokens", 12}};
    json three = sampled;
    three["n"] = 3;
    const json answer = json::parse(server_->post("/v1/completions", completion(three)).body);
    ASSERT_EQ(answer["choices"].size(), 3u) << answer.dump();
    EXPECT_EQ(answer["usage"]["completion_tokens"], 36);
    for (int j = 0; j < 3; ++j) {
        EXPECT_EQ(answer["choices"][j]["index"], j);
        json alone = sampled;
        alone["seed"] = 41 + j;
        const json single = json::parse(server_->post("/v1/completions", completion(alone)).body);
        EXPECT_EQ(answer["choices"][j]["text"], single["choices"][0]["text"]) << "choice " << j;
    }
    // Two prompts with n = 2: indexes run prompt by prompt.
    const json two = json::parse(
        server_->post("/v1/completions", completion({{"prompt", {"def a():\n", "def b():\n"}}, {"n", 2},
                                                     {"max_tokens", 4}, {"temperature", 0}}))
            .body);
    ASSERT_EQ(two["choices"].size(), 4u) << two.dump();
    EXPECT_EQ(two["choices"][0]["text"], two["choices"][1]["text"]);  // greedy: the same reply
    EXPECT_EQ(two["choices"][2]["text"], two["choices"][3]["text"]);
}

// usage.prompt_tokens_details.cached_tokens: the prompt tokens whose KV was
// already held. A regenerated prompt takes the cached KV over, and the
// choices of a request share it: the first takes the cache's entry, the
// others copy it from the first one's running stream; every reply as before.
TEST_F(Api, ARegeneratedPromptAndItsChoicesReadOnlyTheirLastTokenAgain) {
    const json request = {{"prompt", "class Stack:\n    def __init__(self):\n"}, {"max_tokens", 8}};
    const json first = json::parse(server_->post("/v1/completions", completion(request)).body);
    const int prompt_tokens = first["usage"]["prompt_tokens"].get<int>();
    ASSERT_GT(prompt_tokens, 2) << first.dump();
    EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0) << first.dump();
    const json again = json::parse(server_->post("/v1/completions", completion(request)).body);
    EXPECT_EQ(again["usage"]["prompt_tokens_details"]["cached_tokens"], prompt_tokens - 1) << again.dump();
    EXPECT_EQ(again["choices"][0]["text"], first["choices"][0]["text"]);
    json three = request;
    three["n"] = 3;
    const json choices = json::parse(server_->post("/v1/completions", completion(three)).body);
    ASSERT_EQ(choices["choices"].size(), 3u) << choices.dump();
    EXPECT_EQ(choices["usage"]["prompt_tokens"], 3 * prompt_tokens);
    EXPECT_EQ(choices["usage"]["prompt_tokens_details"]["cached_tokens"], 3 * (prompt_tokens - 1)) << choices.dump();
    for (const json& choice : choices["choices"]) EXPECT_EQ(choice["text"], first["choices"][0]["text"]);
}

TEST_F(Api, StreamedChatWithTwoChoicesOpensAndFinishesEach) {
    const json body = {{"messages", {{{"role", "user"}, {"content", "Write a loop."}}}},
                       {"n", 2}, {"max_tokens", 8}, {"temperature", 0.8}, {"seed", 3}, {"stream", true}};
    const Response r = server_->post("/v1/chat/completions", body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    std::map<int, std::string> text;
    std::map<int, int> roles, finishes;
    for (const std::string& payload : sse_payloads(r.body)) {
        if (payload == "[DONE]") continue;
        const json chunk = json::parse(payload);
        for (const json& choice : chunk["choices"]) {
            const int index = choice["index"];
            const json& delta = choice["delta"];
            if (delta.contains("role")) ++roles[index];
            if (delta.contains("content")) text[index] += delta["content"].get<std::string>();
            if (!choice["finish_reason"].is_null()) ++finishes[index];
        }
    }
    const json whole = json::parse(server_->post("/v1/chat/completions", [&] {
                                              json b = body;
                                              b.erase("stream");
                                              return b.dump();
                                          }())
                                       .body);
    for (int index : {0, 1}) {
        EXPECT_EQ(roles[index], 1) << index;
        EXPECT_EQ(finishes[index], 1) << index;
        EXPECT_EQ(text[index], whole["choices"][index]["message"]["content"]) << index;
    }
}

TEST_F(Api, IncludeUsageSendsAUsageChunkBeforeDone) {
    const Response r = server_->post("/v1/completions",
                                     completion({{"stream", true}, {"stream_options", {{"include_usage", true}}}}));
    const std::vector<std::string> payloads = sse_payloads(r.body);
    ASSERT_GE(payloads.size(), 3u);
    EXPECT_EQ(payloads.back(), "[DONE]");
    const json usage = json::parse(payloads[payloads.size() - 2]);
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["completion_tokens"], 16);
    EXPECT_GT(usage["usage"]["prompt_tokens"].get<int>(), 0);
    for (size_t i = 0; i + 2 < payloads.size(); ++i) EXPECT_TRUE(json::parse(payloads[i])["usage"].is_null());
}

TEST_F(Api, ChatRunsTheTemplateAndAnswersAnAssistantMessage) {
    const json request = {{"model", "tinycode"},
                          {"messages", {{{"role", "user"}, {"content", "write a sort"}}}},
                          {"max_completion_tokens", 12},
                          {"temperature", 0}};
    const Response r = server_->post("/v1/chat/completions", request.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = json::parse(r.body);
    EXPECT_EQ(body["object"], "chat.completion");
    EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
    EXPECT_TRUE(body["choices"][0]["message"]["content"].is_string());
    // The prompt is the template's rendering, as `tensorfold tokenize --chat` gives it.
    const std::string ids_text = shell(binary() + " tokenize --chat " + tinycode_dir() +
                                       " <<'EOF'\n[{\"role\": \"user\", \"content\": \"write a sort\"}]\nEOF");
    const json ids = json::parse(ids_text, nullptr, false);
    ASSERT_TRUE(ids.is_array()) << ids_text;
    EXPECT_EQ(body["usage"]["prompt_tokens"], ids.size());
}

TEST_F(Api, StreamedChatStartsWithTheRoleAndEndsWithDone) {
    const json request = {{"model", "tinycode"},
                          {"messages", {{{"role", "user"}, {"content", "hello"}}}},
                          {"max_tokens", 8},
                          {"temperature", 0},
                          {"stream", true},
                          {"stream_options", {{"include_usage", true}}}};
    const Response r = server_->post("/v1/chat/completions", request.dump());
    const std::vector<std::string> payloads = sse_payloads(r.body);
    ASSERT_GE(payloads.size(), 4u);
    const json first = json::parse(payloads[0]);
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
    const json last_choice = json::parse(payloads[payloads.size() - 3]);
    ASSERT_FALSE(last_choice["choices"][0]["finish_reason"].is_null());
    const json usage = json::parse(payloads[payloads.size() - 2])["usage"];
    if (last_choice["choices"][0]["finish_reason"] == "length") {
        EXPECT_EQ(usage["completion_tokens"], 8);
    } else {
        EXPECT_LE(usage["completion_tokens"], 8);  // the model's EOS came first
    }
    EXPECT_EQ(payloads.back(), "[DONE]");
    for (size_t i = 1; i + 3 < payloads.size(); ++i) {
        const json delta = json::parse(payloads[i])["choices"][0]["delta"];
        EXPECT_FALSE(delta["content"].get<std::string>().empty()) << "empty text chunks are skipped";
    }
}

TEST_F(Api, CurlGetsTheCompletionAndTheStreamOfTheReadme) {
    // The README's two curl commands, against this server.
    const std::string url = server_->base_url();
    const json completion = json::parse(shell(
        "curl -s " + url + "/v1/completions -H 'Content-Type: application/json' "
        "-d '{\"model\": \"tinycode\", \"prompt\": \"def fibonacci(n):\\n\", \"max_tokens\": 64, \"temperature\": 0.7, \"seed\": 1}'"));
    EXPECT_EQ(completion["usage"]["completion_tokens"].get<int>() + completion["usage"]["prompt_tokens"].get<int>(),
              completion["usage"]["total_tokens"].get<int>());
    EXPECT_EQ(completion["usage"]["prompt_tokens"], 8) << "def fibonacci(n):\n";
    const std::string stream = shell(
        "curl -sN " + url + "/v1/chat/completions -H 'Content-Type: application/json' "
        "-d '{\"model\": \"tinycode\", \"messages\": [{\"role\": \"user\", \"content\": \"Write a function that reverses a string.\"}], "
        "\"max_tokens\": 32, \"stream\": true}'");
    const std::vector<std::string> payloads = sse_payloads(stream);
    ASSERT_GE(payloads.size(), 3u) << stream;
    EXPECT_EQ(json::parse(payloads.front())["choices"][0]["delta"]["role"], "assistant");
    EXPECT_EQ(payloads.back(), "[DONE]");
}

TEST_F(Api, MalformedJsonIs400) {
    expect_error(server_->post("/v1/completions", "{\"model\": "), 400, "not valid JSON");
}

TEST_F(Api, WrongTypesAre400NamingTheField) {
    expect_error(server_->post("/v1/completions", completion({{"temperature", "hot"}})), 400, "temperature");
    expect_error(server_->post("/v1/completions", completion({{"max_tokens", "many"}})), 400, "max_tokens");
    expect_error(server_->post("/v1/chat/completions", R"({"model":"tinycode","messages":"hi"})"), 400, "messages");
}

TEST_F(Api, UnknownModelIs404ModelNotFoundNamingTheServedOne) {
    for (const char* route : {"/v1/completions", "/v1/chat/completions"}) {
        const std::string body =
            std::string(route) == "/v1/completions"
                ? completion({{"model", "gpt-4"}})
                : json{{"model", "gpt-4"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}.dump();
        const Response r = server_->post(route, body);
        EXPECT_EQ(r.status, 404) << route << ": " << r.body;
        const json error = json::parse(r.body)["error"];
        EXPECT_EQ(error["code"], "model_not_found") << r.body;
        EXPECT_EQ(error["param"], "model");
        EXPECT_NE(error["message"].get<std::string>().find("'gpt-4' is not served here"), std::string::npos);
        EXPECT_NE(error["message"].get<std::string>().find("tinycode"), std::string::npos);
    }
}

TEST_F(Api, ARequestWithoutAModelGetsTheServedOne) {
    json body = json::parse(completion());
    body.erase("model");
    const Response r = server_->post("/v1/completions", body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(json::parse(r.body)["model"], "tinycode");
    const json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 4}};
    const Response c = server_->post("/v1/chat/completions", chat.dump());
    ASSERT_EQ(c.status, 200) << c.body;
    EXPECT_EQ(json::parse(c.body)["model"], "tinycode");
}

TEST_F(Api, PromptLongerThanTheContextIs400) {
    std::string long_prompt;
    for (int i = 0; i < 300; ++i) long_prompt += "x = 1\n";
    expect_error(server_->post("/v1/completions", completion({{"prompt", long_prompt}})), 400, "context of 256 tokens");
}

TEST_F(Api, MaxTokensBeyondTheContextIs400) {
    expect_error(server_->post("/v1/completions", completion({{"max_tokens", 1000}})), 400, "max_tokens");
}

TEST_F(Api, MaxTokensAbsentRunsToTheEndOfTheContext) {
    // With no max_tokens and no EOS in reach the reply ends with the context:
    // prompt + reply = 256 tokens, finish_reason "length".
    std::string prompt;
    for (int i = 0; i < 26; ++i) prompt += "x" + std::to_string(i) + " = " + std::to_string(i) + "\n";
    json request = {{"model", "tinycode"}, {"prompt", prompt}, {"temperature", 0}};
    const Response r = server_->post("/v1/completions", request.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = json::parse(r.body);
    const int prompt_tokens = body["usage"]["prompt_tokens"];
    const int completion_tokens = body["usage"]["completion_tokens"];
    if (body["choices"][0]["finish_reason"] == "length") {
        EXPECT_EQ(prompt_tokens + completion_tokens, 256);
    } else {
        EXPECT_LT(prompt_tokens + completion_tokens, 256);  // EOS came first
    }
    EXPECT_GT(completion_tokens, 16);
}

TEST_F(Api, InvalidTokenIdsAre400) {
    expect_error(server_->post("/v1/completions", completion({{"prompt", {1, 2, 8192}}})), 400, "token id 8192");
    expect_error(server_->post("/v1/completions", completion({{"prompt", {1, -5}}})), 400, "token id -5");
}

TEST_F(Api, NegativeOrAbsurdMaxTokensAre400) {
    expect_error(server_->post("/v1/completions", completion({{"max_tokens", -1}})), 400, "max_tokens");
    expect_error(server_->post("/v1/completions", completion({{"max_tokens", 1000000000}})), 400, "max_tokens");
    expect_error(server_->post("/v1/chat/completions",
                               R"({"model":"tinycode","messages":[{"role":"user","content":"x"}],"max_completion_tokens":0})"),
                 400, "max_completion_tokens");
}

TEST_F(Api, UnknownRouteIs404) {
    expect_error(server_->get("/v1/embeddings"), 404, "/v1/embeddings");
    expect_error(server_->get("/nothing"), 404, "/nothing");
}

TEST_F(Api, WrongMethodIs405WithAllow) {
    const Response r = server_->get("/v1/completions");
    expect_error(r, 405, "GET");
    EXPECT_EQ(r.headers.at("allow"), "POST");
    EXPECT_EQ(server_->request("PUT", "/v1/recall").headers.at("allow"), "GET, DELETE");
}

TEST_F(Api, MetricsCountTheRequestsAndTokens) {
    server_->post("/v1/completions", completion());
    const Response r = server_->get("/metrics");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.headers.at("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    EXPECT_NE(r.body.find("tensorfold_generation_tokens_total "), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("tensorfold_recall_state{state=\"off\"} 1"), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find("tensorfold_time_to_first_token_seconds_count 0\n"), std::string::npos) << r.body;
}

// --- auth -------------------------------------------------------------------

TEST(Auth, EveryV1RouteNeedsTheKeyAndHealthAndMetricsAreOpen) {
    ServerProcess server({"--api-key", "sekret"});
    ASSERT_TRUE(server.listening()) << server.output();
    const std::map<std::string, std::string> good = {{"Authorization", "Bearer sekret"}};
    const std::map<std::string, std::string> bad = {{"Authorization", "Bearer sekreT"}};
    for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
             {"GET", "/v1/models"}, {"POST", "/v1/completions"}, {"POST", "/v1/chat/completions"},
             {"GET", "/v1/recall"}, {"DELETE", "/v1/recall"}, {"GET", "/v1/unknown"}}) {
        const Response none = server.request(method, path, completion());
        expect_error(none, 401, "API key");
        EXPECT_EQ(none.headers.at("www-authenticate"), "Bearer");
        expect_error(server.request(method, path, completion(), bad), 401, "API key");
    }
    EXPECT_EQ(server.get("/v1/models", good).status, 200);
    EXPECT_EQ(server.post("/v1/completions", completion(), good).status, 200);
    EXPECT_EQ(server.get("/v1/recall", good).status, 200);
    EXPECT_EQ(server.get("/health").status, 200);
    EXPECT_EQ(server.get("/metrics").status, 200);
}

TEST(ServedModelName, RequestsMustUseIt) {
    ServerProcess server({"--served-model-name", "coder"});
    ASSERT_TRUE(server.listening()) << server.output();
    EXPECT_EQ(json::parse(server.get("/v1/models").body)["data"][0]["id"], "coder");
    EXPECT_EQ(server.post("/v1/completions", completion({{"model", "coder"}})).status, 200);
    const Response other = server.post("/v1/completions", completion());
    EXPECT_EQ(other.status, 404) << other.body;
    EXPECT_NE(other.body.find("'tinycode' is not served here"), std::string::npos) << other.body;
}

}  // namespace
}  // namespace tf::e2e
