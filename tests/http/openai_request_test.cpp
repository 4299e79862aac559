// Request bodies of the OpenAI routes: every accepted shape, and every
// rejection as a 400 whose message names the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http/openai_request.h"

namespace tf::http {
namespace {

// Expects `parse(body)` to throw a 400 naming `field` with `needle` in the message.
template <typename Parse>
void expect_400(Parse parse, const std::string& body, const std::string& field, const std::string& needle) {
    try {
        parse(body);
        ADD_FAILURE() << "accepted: " << body;
    } catch (const ApiError& error) {
        EXPECT_EQ(error.status, 400) << body;
        EXPECT_EQ(error.param, field) << body;
        EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
    }
}

void completion_400(const std::string& body, const std::string& field, const std::string& needle) {
    expect_400(parse_completion_request, body, field, needle);
}
void chat_400(const std::string& body, const std::string& field, const std::string& needle) {
    expect_400(parse_chat_request, body, field, needle);
}

TEST(CompletionRequest, AStringPrompt) {
    CompletionRequest r = parse_completion_request(R"({"model":"m","prompt":"def f():"})");
    EXPECT_EQ(r.model, "m");
    ASSERT_EQ(r.prompts.size(), 1u);
    EXPECT_EQ(*r.prompts[0].text, "def f():");
    EXPECT_FALSE(r.sampling.max_tokens);
    EXPECT_FLOAT_EQ(r.sampling.temperature, 1.0f);
    EXPECT_FALSE(r.sampling.stream);
}

TEST(CompletionRequest, PromptShapes) {
    EXPECT_EQ(parse_completion_request(R"({"model":"m","prompt":["a","b"]})").prompts.size(), 2u);
    CompletionRequest ids = parse_completion_request(R"({"model":"m","prompt":[1,2,3]})");
    ASSERT_EQ(ids.prompts.size(), 1u);
    EXPECT_EQ(ids.prompts[0].ids, (std::vector<int32_t>{1, 2, 3}));
    CompletionRequest batches = parse_completion_request(R"({"model":"m","prompt":[[1,2],[3]]})");
    ASSERT_EQ(batches.prompts.size(), 2u);
    EXPECT_EQ(batches.prompts[1].ids, (std::vector<int32_t>{3}));
}

TEST(CompletionRequest, SamplingFields) {
    CompletionRequest r = parse_completion_request(
        R"({"model":"m","prompt":"x","max_tokens":40,"temperature":0.5,"top_p":0.9,"top_k":20,"min_p":0.05,
            "seed":1234,"stop":["\n\n","END"],"stream":true,"stream_options":{"include_usage":true},"echo":true,
            "n":1,"user":"someone"})");
    EXPECT_EQ(*r.sampling.max_tokens, 40);
    EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
    EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
    EXPECT_EQ(r.sampling.top_k, 20);
    EXPECT_FLOAT_EQ(r.sampling.min_p, 0.05f);
    EXPECT_EQ(*r.sampling.seed, 1234u);
    EXPECT_EQ(r.sampling.stop, (std::vector<std::string>{"\n\n", "END"}));
    EXPECT_TRUE(r.sampling.stream);
    EXPECT_TRUE(r.sampling.include_usage);
    EXPECT_TRUE(r.echo);
}

TEST(CompletionRequest, AStopStringAlone) {
    EXPECT_EQ(parse_completion_request(R"({"model":"m","prompt":"x","stop":"END"})").sampling.stop,
              std::vector<std::string>{"END"});
}

TEST(CompletionRequest, TopKMinusOneMeansNoLimit) {
    EXPECT_EQ(parse_completion_request(R"({"model":"m","prompt":"x","top_k":-1})").sampling.top_k, 0);
}

TEST(CompletionRequest, NullFieldsCountAsAbsent) {
    CompletionRequest r = parse_completion_request(R"({"model":"m","prompt":"x","max_tokens":null,"stop":null})");
    EXPECT_FALSE(r.sampling.max_tokens);
    EXPECT_TRUE(r.sampling.stop.empty());
}

TEST(CompletionRequest, MalformedJson) { completion_400("{\"model\":", "", "not valid JSON"); }
TEST(CompletionRequest, NotAnObject) { completion_400("[1,2]", "", "expected a JSON object, got an array"); }
// Like llama-server and vLLM, a request may leave out the model: it gets the one served.
TEST(CompletionRequest, AbsentModelIsEmpty) { EXPECT_EQ(parse_completion_request(R"({"prompt":"x"})").model, ""); }
TEST(ChatRequest, AbsentModelIsEmpty) {
    EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}]})").model, "");
}
TEST(CompletionRequest, ModelOfWrongType) { completion_400(R"({"model":5,"prompt":"x"})", "model", "expected a string, got an integer"); }
TEST(CompletionRequest, MissingPrompt) { completion_400(R"({"model":"m"})", "prompt", "prompt: required"); }
TEST(CompletionRequest, EmptyPromptArray) { completion_400(R"({"model":"m","prompt":[]})", "prompt", "must not be an empty array"); }
TEST(CompletionRequest, PromptOfWrongType) { completion_400(R"({"model":"m","prompt":{}})", "prompt", "expected a string"); }
TEST(CompletionRequest, NegativeTokenId) { completion_400(R"({"model":"m","prompt":[1,-2]})", "prompt", "token id -2"); }
TEST(CompletionRequest, MixedTokenIds) { completion_400(R"({"model":"m","prompt":[1,"a"]})", "prompt", "token ids"); }

TEST(CompletionRequest, MaxTokensMustBePositiveAndSane) {
    completion_400(R"({"model":"m","prompt":"x","max_tokens":0})", "max_tokens", "max_tokens: 0 must be between 1");
    completion_400(R"({"model":"m","prompt":"x","max_tokens":-5})", "max_tokens", "max_tokens: -5");
    completion_400(R"({"model":"m","prompt":"x","max_tokens":99999999999})", "max_tokens", "must be between 1 and");
    completion_400(R"({"model":"m","prompt":"x","max_tokens":"10"})", "max_tokens", "expected an integer, got a string");
    completion_400(R"({"model":"m","prompt":"x","max_tokens":1.5})", "max_tokens", "expected an integer, got a number");
}

TEST(CompletionRequest, SamplingRanges) {
    completion_400(R"({"model":"m","prompt":"x","temperature":-0.1})", "temperature", "outside [0, 2]");
    completion_400(R"({"model":"m","prompt":"x","temperature":"hot"})", "temperature", "expected a number");
    completion_400(R"({"model":"m","prompt":"x","top_p":0})", "top_p", "outside (0, 1]");
    completion_400(R"({"model":"m","prompt":"x","top_k":-2})", "top_k", "must be -1, 0");
    completion_400(R"({"model":"m","prompt":"x","min_p":2})", "min_p", "outside [0, 1]");
    completion_400(R"({"model":"m","prompt":"x","seed":"abc"})", "seed", "expected an integer");
    completion_400(R"({"model":"m","prompt":"x","stream":"yes"})", "stream", "expected a boolean");
    completion_400(R"({"model":"m","prompt":"x","stream_options":3})", "stream_options", "expected an object");
}

TEST(CompletionRequest, StopShapes) {
    completion_400(R"({"model":"m","prompt":"x","stop":5})", "stop", "a string or an array of strings");
    completion_400(R"({"model":"m","prompt":"x","stop":[""]})", "stop", "must not be empty");
    completion_400(R"({"model":"m","prompt":"x","stop":["a",1]})", "stop", "a string or an array of strings");
}

TEST(CompletionRequest, ChoicesPerPrompt) {
    EXPECT_EQ(parse_completion_request(R"({"prompt":"x"})").sampling.n, 1);
    EXPECT_EQ(parse_completion_request(R"({"prompt":"x","n":3})").sampling.n, 3);
    EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"n":2})").sampling.n, 2);
    completion_400(R"({"model":"m","prompt":"x","n":0})", "n", "must be between 1 and 32");
    completion_400(R"({"model":"m","prompt":"x","n":33})", "n", "must be between 1 and 32");
    completion_400(R"({"model":"m","prompt":"x","n":"two"})", "n", "expected an integer");
}

TEST(CompletionRequest, LogprobsTakeACountOfAlternatives) {
    EXPECT_EQ(parse_completion_request(R"({"prompt":"x"})").sampling.logprobs, -1);
    EXPECT_EQ(parse_completion_request(R"({"prompt":"x","logprobs":null})").sampling.logprobs, -1);
    EXPECT_EQ(parse_completion_request(R"({"prompt":"x","logprobs":0})").sampling.logprobs, 0);
    EXPECT_EQ(parse_completion_request(R"({"prompt":"x","logprobs":5})").sampling.logprobs, 5);
    completion_400(R"({"prompt":"x","logprobs":21})", "logprobs", "between 0 and 20");
    completion_400(R"({"prompt":"x","logprobs":-1})", "logprobs", "between 0 and 20");
    completion_400(R"({"prompt":"x","logprobs":true})", "logprobs", "expected an integer");
}

TEST(ChatRequest, LogprobsAreAFlagWithTopLogprobsAlternatives) {
    auto parsed = [](const std::string& extra) {
        return parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}])" + extra + "}").sampling.logprobs;
    };
    EXPECT_EQ(parsed(""), -1);
    EXPECT_EQ(parsed(R"(,"logprobs":false)"), -1);
    EXPECT_EQ(parsed(R"(,"logprobs":true)"), 0);
    EXPECT_EQ(parsed(R"(,"logprobs":true,"top_logprobs":20)"), 20);
    chat_400(R"({"messages":[{"role":"user","content":"hi"}],"top_logprobs":2})", "top_logprobs", "\"logprobs\": true");
    chat_400(R"({"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":21})", "top_logprobs",
             "between 0 and 20");
    chat_400(R"({"messages":[{"role":"user","content":"hi"}],"logprobs":2})", "logprobs", "expected a boolean");
}

TEST(ChatRequest, ResponseFormatNamesTheSchemaOrRefusesByField) {
    const std::string messages = R"("messages":[{"role":"user","content":"hi"}])";
    auto format = [&](const std::string& value) {
        return parse_chat_request("{" + messages + R"(,"response_format":)" + value + "}").sampling.response_format;
    };
    EXPECT_EQ(format(R"({"type":"text"})").type, ResponseFormat::Type::text);
    EXPECT_EQ(format(R"({"type":"json_object"})").type, ResponseFormat::Type::json_object);
    const ResponseFormat schema =
        format(R"({"type":"json_schema","json_schema":{"name":"point","strict":true,"schema":{"type":"object"}}})");
    EXPECT_EQ(schema.type, ResponseFormat::Type::json_schema);
    EXPECT_EQ(schema.name, "point");
    EXPECT_TRUE(schema.strict);
    EXPECT_EQ(schema.schema_json, R"({"type":"object"})");
    EXPECT_EQ(format(R"({"type":"json_schema","json_schema":{"schema":{"properties":{"z":{},"a":{}}}}})").schema_json,
              R"({"properties":{"z":{},"a":{}}})")
        << "the schema keeps its key order: properties are written in it";
    chat_400("{" + messages + R"(,"response_format":{"type":"yaml"}})", "response_format", "'yaml' is not one of");
    chat_400("{" + messages + R"(,"response_format":{"type":"json_schema"}})", "response_format",
             "response_format.json_schema: required object");
    chat_400("{" + messages + R"(,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}})",
             "response_format", "response_format.json_schema.schema: required");
    chat_400("{" + messages + R"(,"response_format":"json"})", "response_format", "expected an object");
}

TEST(CompletionRequest, UnsupportedFeaturesAreRefused) {
    completion_400(R"({"model":"m","prompt":"x","presence_penalty":0.5})", "presence_penalty", "not supported");
    completion_400(R"({"model":"m","prompt":"x","best_of":3})", "best_of", "only 1");
}

TEST(ChatRequest, Messages) {
    ChatRequest r = parse_chat_request(
        R"({"model":"m","messages":[{"role":"system","content":"be brief"},
            {"role":"user","content":[{"type":"text","text":"hi "},{"type":"text","text":"there"}]}],
            "max_completion_tokens":7})");
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[0].role, "system");
    EXPECT_EQ(r.messages[1].content, "hi there");
    EXPECT_EQ(*r.sampling.max_tokens, 7);
}

TEST(ChatRequest, AddGenerationPromptIsOnUnlessTheRequestTurnsItOff) {
    EXPECT_TRUE(parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"x"}]})").add_generation_prompt);
    EXPECT_FALSE(parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"x"}],"add_generation_prompt":false})")
                     .add_generation_prompt);
    chat_400(R"({"model":"m","messages":[{"role":"user","content":"x"}],"add_generation_prompt":1})",
             "add_generation_prompt", "expected a boolean");
}

TEST(ChatRequest, MaxTokensIsAcceptedToo) {
    EXPECT_EQ(*parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":3})")
                   .sampling.max_tokens,
              3);
}

TEST(ChatRequest, Rejections) {
    chat_400(R"({"model":"m"})", "messages", "messages: required");
    chat_400(R"({"model":"m","messages":{}})", "messages", "expected an array");
    chat_400(R"({"model":"m","messages":[]})", "messages", "at least one message");
    chat_400(R"({"model":"m","messages":[{"content":"x"}]})", "messages", "messages[0].role: required");
    chat_400(R"({"model":"m","messages":[{"role":"wizard","content":"x"}]})", "messages", "'wizard' is not one of");
    chat_400(R"({"model":"m","messages":[{"role":"user","content":5}]})", "messages[0].content", "expected a string");
    chat_400(R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]})", "messages",
             "only \"text\" parts");
    chat_400(R"({"model":"m","messages":[{"role":"user","content":"x"}],"max_completion_tokens":0})",
             "max_completion_tokens", "max_completion_tokens: 0");
}

// A chat body with these extra fields after one user message.
std::string chat_with(const std::string& extra) {
    return R"({"model":"m","messages":[{"role":"user","content":"x"}],)" + extra + "}";
}

const std::string kTools = R"("tools":[{"type":"function","function":{"name":"get_weather","description":"Weather now",
    "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},{"type":"function","function":{"name":"noop"}}])";

TEST(ChatRequestTools, ToolsAreParsedAndKeptWholeForTheTemplate) {
    const ChatRequest r = parse_chat_request(chat_with(kTools));
    ASSERT_EQ(r.tools.size(), 2u);
    EXPECT_EQ(r.tools[0].name, "get_weather");
    EXPECT_EQ(r.tools[0].description, "Weather now");
    EXPECT_EQ(nlohmann::json::parse(r.tools[0].parameters_json)["properties"]["city"]["type"], "string");
    EXPECT_EQ(nlohmann::json::parse(r.tools[0].entry_json)["function"]["name"], "get_weather");
    EXPECT_EQ(r.tools[1].parameters_json, "");
    EXPECT_EQ(r.tool_choice.mode, ToolChoice::Mode::automatic);
    EXPECT_TRUE(r.parallel_tool_calls);
}

TEST(ChatRequestTools, NoToolsMeansToolChoiceNone) {
    EXPECT_EQ(parse_chat_request(chat_with(R"("stream":false)")).tool_choice.mode, ToolChoice::Mode::none);
    EXPECT_EQ(parse_chat_request(chat_with(R"("tools":[])")).tool_choice.mode, ToolChoice::Mode::none);
    EXPECT_EQ(parse_chat_request(chat_with(R"("tool_choice":"auto")")).tool_choice.mode, ToolChoice::Mode::none);
}

TEST(ChatRequestTools, ToolChoiceShapes) {
    EXPECT_EQ(parse_chat_request(chat_with(kTools + R"(,"tool_choice":"none")")).tool_choice.mode, ToolChoice::Mode::none);
    EXPECT_EQ(parse_chat_request(chat_with(kTools + R"(,"tool_choice":"auto")")).tool_choice.mode,
              ToolChoice::Mode::automatic);
    EXPECT_EQ(parse_chat_request(chat_with(kTools + R"(,"tool_choice":"required")")).tool_choice.mode,
              ToolChoice::Mode::required);
    const ChatRequest named =
        parse_chat_request(chat_with(kTools + R"(,"tool_choice":{"type":"function","function":{"name":"noop"}})"));
    EXPECT_EQ(named.tool_choice.mode, ToolChoice::Mode::function);
    EXPECT_EQ(named.tool_choice.function, "noop");
    EXPECT_FALSE(parse_chat_request(chat_with(kTools + R"(,"parallel_tool_calls":false)")).parallel_tool_calls);
}

TEST(ChatRequestTools, BadToolsAreRefusedNamingTheField) {
    chat_400(chat_with(R"("tools":{})"), "tools", "tools: expected an array");
    chat_400(chat_with(R"("tools":[5])"), "tools[0]", "tools[0]: expected an object");
    chat_400(chat_with(R"("tools":[{"function":{"name":"f"}}])"), "tools", "tools[0].type: required");
    chat_400(chat_with(R"("tools":[{"type":"retrieval","function":{"name":"f"}}])"), "tools",
             "tools[0].type: must be \"function\"");
    chat_400(chat_with(R"("tools":[{"type":"function"}])"), "tools", "tools[0].function: required");
    chat_400(chat_with(R"("tools":[{"type":"function","function":{}}])"), "tools", "tools[0].function.name: required");
    chat_400(chat_with(R"("tools":[{"type":"function","function":{"name":3}}])"), "tools[0].function.name",
             "expected a string");
    chat_400(chat_with(R"("tools":[{"type":"function","function":{"name":"two words"}}])"), "tools",
             "must be 1 to 64 letters");
    chat_400(chat_with(R"("tools":[{"type":"function","function":{"name":"f","parameters":"x"}}])"),
             "tools[0].function.parameters", "expected an object");
    chat_400(chat_with(R"("tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}])"),
             "tools", "tools[1].function.name: 'f' is defined twice");
}

TEST(ChatRequestTools, BadToolChoicesAreRefused) {
    chat_400(chat_with(kTools + R"(,"tool_choice":"always")"), "tool_choice", "'always' is not one of none, auto, required");
    chat_400(chat_with(kTools + R"(,"tool_choice":{"type":"function","function":{"name":"fly"}})"), "tool_choice",
             "'fly' is not among tools");
    chat_400(chat_with(kTools + R"(,"tool_choice":{"type":"function"})"), "tool_choice", "tool_choice.function: required");
    chat_400(chat_with(kTools + R"(,"tool_choice":{"function":{"name":"noop"}})"), "tool_choice", "tool_choice.type");
    chat_400(chat_with(kTools + R"(,"tool_choice":3)"), "tool_choice", "expected a string or an object");
    chat_400(chat_with(R"("tool_choice":"required")"), "tool_choice", "needs tools");
    chat_400(chat_with(R"("tool_choice":{"type":"function","function":{"name":"noop"}})"), "tool_choice", "not among tools");
    chat_400(chat_with(kTools + R"(,"parallel_tool_calls":"yes")"), "parallel_tool_calls", "expected a boolean");
}

TEST(ChatRequestTools, HistoryWithToolCallsAndToolMessages) {
    const ChatRequest r = parse_chat_request(R"({"messages":[
        {"role":"user","content":"Weather in Oslo?"},
        {"role":"assistant","content":null,"tool_calls":[
            {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}},
            {"id":"call_2","type":"function","function":{"name":"raw","arguments":"not json"}},
            {"type":"function","function":{"name":"as_object","arguments":{"x":1}}}]},
        {"role":"tool","tool_call_id":"call_1","content":"cold"}]})");
    ASSERT_EQ(r.messages.size(), 3u);
    const ChatMessage& assistant = r.messages[1];
    EXPECT_EQ(assistant.content, "");
    ASSERT_EQ(assistant.tool_calls.size(), 3u);
    EXPECT_EQ(assistant.tool_calls[0].id, "call_1");
    EXPECT_EQ(assistant.tool_calls[0].name, "get_weather");
    EXPECT_EQ(assistant.tool_calls[0].arguments_json, R"({"city":"Oslo"})");  // the object, for the template
    EXPECT_EQ(assistant.tool_calls[1].arguments_json, R"("not json")");       // kept as a string
    EXPECT_EQ(assistant.tool_calls[2].arguments_json, R"({"x":1})");
    EXPECT_EQ(assistant.tool_calls[2].id, "");
    EXPECT_EQ(*r.messages[2].tool_call_id, "call_1");
    EXPECT_EQ(r.messages[2].content, "cold");
}

TEST(ChatRequestTools, BadHistoryToolFieldsAreRefused) {
    const auto with_message = [](const std::string& message) {
        return R"({"messages":[{"role":"user","content":"x"},)" + message + "]}";
    };
    chat_400(with_message(R"({"role":"user","content":"x","tool_calls":[{"function":{"name":"f"}}]})"), "messages",
             "messages[1].tool_calls: only assistant messages carry tool calls");
    chat_400(with_message(R"({"role":"assistant","tool_calls":{}})"), "messages[1].tool_calls", "expected an array");
    chat_400(with_message(R"({"role":"assistant","tool_calls":[{"type":"function"}]})"), "messages",
             "messages[1].tool_calls[0].function: required");
    chat_400(with_message(R"({"role":"assistant","tool_calls":[{"function":{"arguments":"{}"}}]})"), "messages",
             "messages[1].tool_calls[0].function.name: required");
    chat_400(with_message(R"({"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":5}}]})"),
             "messages[1].tool_calls[0].function.arguments", "expected a string of JSON");
    chat_400(with_message(R"({"role":"tool","content":"x","tool_call_id":7})"), "messages[1].tool_call_id",
             "expected a string");
}

TEST(ChatRequest, ReasoningInHistoryAndTemplateKwargsReachTheTemplate) {
    const ChatRequest r = parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "reasoning_content": "greet back"}],
        "chat_template_kwargs": {"enable_thinking": false}})");
    EXPECT_EQ(r.messages[1].reasoning_content, "greet back");
    ASSERT_EQ(r.template_variables.size(), 1u);
    EXPECT_EQ(r.template_variables[0], (std::pair<std::string, std::string>{"enable_thinking", "false"}));
}

TEST(ChatRequest, ReasoningInHistoryMayComeUnderItsNewerName) {
    const ChatRequest r = parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "reasoning": "greet back"}]})");
    EXPECT_EQ(r.messages[1].reasoning_content, "greet back");
    // A reply gives both names; the first is read.
    const ChatRequest both = parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "reasoning_content": "a", "reasoning": "a"}]})");
    EXPECT_EQ(both.messages[1].reasoning_content, "a");
}

TEST(CompletionRequest, ToolsBelongToChat) {
    completion_400(R"({"prompt":"x","tools":[{"type":"function","function":{"name":"f"}}]})", "tools", "/v1/chat/completions");
}

// vLLM's "return_token_ids": off unless given, a boolean when given, on both routes.
TEST(OpenAiTokenIdsRequest, OffUnlessAskedFor) {
    EXPECT_FALSE(parse_completion_request(R"({"model":"m","prompt":"x"})").sampling.return_token_ids);
    EXPECT_FALSE(parse_completion_request(R"({"model":"m","prompt":"x","return_token_ids":null})").sampling.return_token_ids);
    EXPECT_TRUE(parse_completion_request(R"({"model":"m","prompt":"x","return_token_ids":true})").sampling.return_token_ids);
    EXPECT_TRUE(parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"return_token_ids":true})")
                    .sampling.return_token_ids);
    EXPECT_FALSE(parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"return_token_ids":false})")
                     .sampling.return_token_ids);
}

TEST(OpenAiTokenIdsRequest, MustBeABoolean) {
    completion_400(R"({"model":"m","prompt":"x","return_token_ids":1})", "return_token_ids", "expected a boolean");
    chat_400(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"return_token_ids":"yes"})", "return_token_ids",
             "expected a boolean");
}

TEST(ApiErrorBody, HasOpenAisShape) {
    ApiError error = bad_request("max_tokens", "max_tokens: must be positive");
    nlohmann::json body = nlohmann::json::parse(error.body());
    EXPECT_EQ(body["error"]["message"], "max_tokens: must be positive");
    EXPECT_EQ(body["error"]["type"], "invalid_request_error");
    EXPECT_EQ(body["error"]["param"], "max_tokens");
    EXPECT_EQ(body["error"]["code"], 400);
    EXPECT_EQ(nlohmann::json::parse(ApiError(401, "no key").body())["error"]["type"], "authentication_error");
}

}  // namespace
}  // namespace tf::http
