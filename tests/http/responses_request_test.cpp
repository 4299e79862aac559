// parse_responses_request: OpenAI's Responses body translated into the
// native ChatRequest that chat completions use.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http/responses_request.h"

namespace tf::http {
namespace {

using nlohmann::json;

ResponsesRequest parse(const json& body) { return parse_responses_request(body.dump()); }

json minimal() { return json::parse(R"({"model": "m", "input": "hi"})"); }

const json kWeatherTool = json::parse(R"({"type": "function", "name": "get_weather", "description": "Weather now",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})");

// The ApiError a body gets; fails the test when it parses.
ApiError rejection(const json& body) {
    try {
        parse(body);
    } catch (const ApiError& e) {
        return e;
    }
    ADD_FAILURE() << "accepted: " << body.dump();
    return ApiError(0, "");
}

void expect_names(const ApiError& e, const std::string& param, const std::string& path) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, param) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
}

TEST(ResponsesRequest, InstructionsAndAStringInputBecomeASystemAndAUserMessage) {
    json body = minimal();
    body["instructions"] = "You write Python.";
    const ResponsesRequest r = parse(body);
    ASSERT_EQ(r.chat.messages.size(), 2u);
    EXPECT_EQ(r.chat.messages[0].role, "system");
    EXPECT_EQ(r.chat.messages[0].content, "You write Python.");
    EXPECT_EQ(r.chat.messages[1].role, "user");
    EXPECT_EQ(r.chat.messages[1].content, "hi");
    EXPECT_EQ(r.chat.model, "m");
    EXPECT_EQ(r.chat.tool_choice.mode, ToolChoice::Mode::none);
    EXPECT_FALSE(r.chat.sampling.max_tokens);
}

TEST(ResponsesRequest, MessageItemsTakeStringsOrTextPartsAndDeveloperIsSystem) {
    json body = minimal();
    body["input"] = json::parse(R"([
        {"role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a "}, {"type": "input_text", "text": "b"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok", "annotations": []}]},
        {"role": "user", "content": "more"}])");
    const ResponsesRequest r = parse(body);
    ASSERT_EQ(r.chat.messages.size(), 4u);
    EXPECT_EQ(r.chat.messages[0].role, "system");
    EXPECT_EQ(r.chat.messages[1].content, "a b");
    EXPECT_EQ(r.chat.messages[2].role, "assistant");
    EXPECT_EQ(r.chat.messages[2].content, "ok");
    EXPECT_EQ(r.chat.messages[3].content, "more");
}

TEST(ResponsesRequest, AnEarlierTurnsItemsJoinIntoOneAssistantMessageWithItsReasoningAndCalls) {
    json body = minimal();
    body["input"] = json::parse(R"([
        {"role": "user", "content": "Weather in Oslo and Rome?"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "Two calls."}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
        {"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"},
        {"type": "function_call", "call_id": "call_b", "name": "get_weather", "arguments": "{\"city\": \"Rome\"}"},
        {"type": "function_call_output", "call_id": "call_a", "output": "{\"celsius\": 4}"},
        {"type": "function_call_output", "call_id": "call_b", "output": [{"type": "input_text", "text": "18"}]}])");
    body["tools"] = json::array({kWeatherTool});
    const ResponsesRequest r = parse(body);
    ASSERT_EQ(r.chat.messages.size(), 4u);
    const ChatMessage& assistant = r.chat.messages[1];
    EXPECT_EQ(assistant.role, "assistant");
    EXPECT_EQ(assistant.content, "Checking.");
    EXPECT_EQ(assistant.reasoning_content, "Two calls.");
    ASSERT_EQ(assistant.tool_calls.size(), 2u);
    EXPECT_EQ(assistant.tool_calls[0].id, "call_a");
    EXPECT_EQ(assistant.tool_calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(assistant.tool_calls[1].arguments_json), json::parse(R"({"city": "Rome"})"));
    EXPECT_EQ(r.chat.messages[2].role, "tool");
    EXPECT_EQ(r.chat.messages[2].tool_call_id, "call_a");
    EXPECT_EQ(r.chat.messages[2].name, "get_weather");
    EXPECT_EQ(r.chat.messages[2].content, "{\"celsius\": 4}");
    EXPECT_EQ(r.chat.messages[3].content, "18");
}

TEST(ResponsesRequest, AReasoningItemWithoutTextGivesTheTurnNoReasoning) {
    json body = minimal();
    body["input"] = json::parse(R"([{"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "content": null, "encrypted_content": "opaque"},
        {"type": "reasoning", "id": "rs_2", "summary": [{"type": "summary_text", "text": "Plan."}]},
        {"type": "message", "role": "assistant", "content": "done"}])");
    const ResponsesRequest r = parse(body);
    ASSERT_EQ(r.chat.messages.size(), 2u);
    EXPECT_EQ(r.chat.messages[1].reasoning_content, "Plan.");
    body["input"].erase(2);
    EXPECT_FALSE(parse(body).chat.messages[1].reasoning_content);
}

TEST(ResponsesRequest, ACallWithoutAMessageBeforeItOpensAnAssistantMessage) {
    json body = minimal();
    body["input"] = json::parse(R"([{"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "not json"}])");
    const ResponsesRequest r = parse(body);
    ASSERT_EQ(r.chat.messages.size(), 2u);
    EXPECT_EQ(r.chat.messages[1].role, "assistant");
    EXPECT_EQ(r.chat.messages[1].content, "");
    // Arguments that are not an object stay the string they were, quoted.
    EXPECT_EQ(r.chat.messages[1].tool_calls.at(0).arguments_json, "\"not json\"");
}

TEST(ResponsesRequest, FunctionToolsAreKeptAndOtherToolTypesLeftOut) {
    json body = minimal();
    body["tools"] = json::parse(R"([{"type": "web_search"}, {"type": "local_shell"},
        {"type": "custom", "name": "apply_patch", "format": {"type": "text"}}])");
    body["tools"].push_back(kWeatherTool);
    const ResponsesRequest r = parse(body);
    ASSERT_EQ(r.chat.tools.size(), 1u);
    EXPECT_EQ(r.chat.tools[0].name, "get_weather");
    EXPECT_EQ(json::parse(r.chat.tools[0].entry_json)["function"]["parameters"]["required"][0], "city");
    EXPECT_EQ(r.chat.tool_choice.mode, ToolChoice::Mode::automatic);
    EXPECT_EQ(json::parse(r.echoed_json)["tools"].size(), 1u);
}

TEST(ResponsesRequest, ToolChoiceTakesItsFourForms) {
    json body = minimal();
    body["tools"] = json::array({kWeatherTool});
    body["tool_choice"] = "none";
    EXPECT_EQ(parse(body).chat.tool_choice.mode, ToolChoice::Mode::none);
    body["tool_choice"] = "required";
    EXPECT_EQ(parse(body).chat.tool_choice.mode, ToolChoice::Mode::required);
    body["tool_choice"] = "auto";
    EXPECT_EQ(parse(body).chat.tool_choice.mode, ToolChoice::Mode::automatic);
    body["tool_choice"] = {{"type", "function"}, {"name", "get_weather"}};
    const ResponsesRequest r = parse(body);
    EXPECT_EQ(r.chat.tool_choice.mode, ToolChoice::Mode::function);
    EXPECT_EQ(r.chat.tool_choice.function, "get_weather");
    body["tool_choice"] = {{"type", "function"}, {"name", "other"}};
    expect_names(rejection(body), "tool_choice", "tool_choice.name");
}

TEST(ResponsesRequest, SamplingFieldsAreRead) {
    json body = minimal();
    body.update(json::parse(R"({"max_output_tokens": 32, "temperature": 0.5, "top_p": 0.9, "stream": true,
                                "parallel_tool_calls": false})"));
    const ResponsesRequest r = parse(body);
    EXPECT_EQ(r.chat.sampling.max_tokens, 32);
    EXPECT_FLOAT_EQ(r.chat.sampling.temperature, 0.5f);
    EXPECT_FLOAT_EQ(r.chat.sampling.top_p, 0.9f);
    EXPECT_TRUE(r.chat.sampling.stream);
    EXPECT_FALSE(r.chat.parallel_tool_calls);
    const json echoed = json::parse(r.echoed_json);
    EXPECT_EQ(echoed["max_output_tokens"], 32);
    EXPECT_EQ(echoed["parallel_tool_calls"], false);
}

TEST(ResponsesRequest, TextFormatJsonSchemaIsAResponseFormatKeepingPropertyOrder) {
    json body = minimal();
    body["text"] = {{"format", {{"type", "json_schema"}, {"name", "point"}, {"strict", true}}}};
    const std::string schema = R"({"type":"object","properties":{"y":{"type":"integer"},"x":{"type":"integer"}}})";
    // Built as text: nlohmann::json would sort the properties.
    const std::string text = R"({"input": "hi", "text": {"format": {"type": "json_schema", "name": "point", "strict": true, "schema": )" +
                             schema + "}}}";
    const ResponsesRequest r = parse_responses_request(text);
    EXPECT_EQ(r.chat.sampling.response_format.type, ResponseFormat::Type::json_schema);
    EXPECT_EQ(r.chat.sampling.response_format.schema_json, schema);
    EXPECT_EQ(r.chat.sampling.response_format.name, "point");
    EXPECT_TRUE(r.chat.sampling.response_format.strict);
    body["text"]["format"] = {{"type", "json_object"}};
    EXPECT_EQ(parse(body).chat.sampling.response_format.type, ResponseFormat::Type::json_object);
    body["text"]["format"] = {{"type", "json_schema"}};
    expect_names(rejection(body), "text", "text.format.schema");
}

TEST(ResponsesRequest, ReasoningEffortSwitchesThinking) {
    json body = minimal();
    EXPECT_FALSE(parse(body).thinking);
    body["reasoning"] = {{"effort", "low"}, {"summary", "auto"}};
    EXPECT_EQ(parse(body).thinking, true);
    EXPECT_EQ(json::parse(parse(body).echoed_json)["reasoning"]["effort"], "low");
    body["reasoning"] = {{"effort", "none"}};
    EXPECT_EQ(parse(body).thinking, false);
    body["reasoning"] = {{"effort", "extreme"}};
    expect_names(rejection(body), "reasoning", "reasoning.effort");
}

TEST(ResponsesRequest, FieldsWithNoEffectHereAreAccepted) {
    json body = minimal();
    body.update(json::parse(R"({"store": true, "prompt_cache_key": "k", "include": ["reasoning.encrypted_content"],
        "metadata": {"a": "b"}, "user": "u", "truncation": "auto", "service_tier": "auto"})"));
    const json echoed = json::parse(parse(body).echoed_json);
    EXPECT_EQ(echoed["store"], false);  // nothing is kept, and the response says so
    EXPECT_EQ(echoed["prompt_cache_key"], "k");
}

TEST(ResponsesRequest, PreviousResponseIdIsRefusedNamingIt) {
    json body = minimal();
    body["previous_response_id"] = "resp_123";
    expect_names(rejection(body), "previous_response_id", "previous_response_id");
}

TEST(ResponsesRequest, InputMustBeAStringOrAnArray) {
    json body = minimal();
    body["input"] = 42;
    expect_names(rejection(body), "input", "input");
    body.erase("input");
    expect_names(rejection(body), "input", "input");
    body["input"] = json::array();
    expect_names(rejection(body), "input", "input");
}

TEST(ResponsesRequest, AnUnknownItemTypeOrRoleOrPartIsNamed) {
    json body = minimal();
    body["input"] = json::parse(R"([{"type": "item_reference", "id": "x"}])");
    expect_names(rejection(body), "input", "input[0].type");
    body["input"] = json::parse(R"([{"role": "tool", "content": "x"}])");
    expect_names(rejection(body), "input", "input[0].role");
    body["input"] = json::parse(R"([{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}])");
    expect_names(rejection(body), "input", "input[0].content[0].type");
    body["input"] = json::parse(R"([{"type": "function_call_output", "output": "x"}])");
    expect_names(rejection(body), "input", "input[0].call_id");
}

TEST(ResponsesRequest, OutOfRangeSamplingIsNamed) {
    json body = minimal();
    body["max_output_tokens"] = 0;
    expect_names(rejection(body), "max_output_tokens", "max_output_tokens");
    body = minimal();
    body["temperature"] = 3;
    expect_names(rejection(body), "temperature", "temperature");
    body = minimal();
    body["tool_choice"] = "required";
    expect_names(rejection(body), "tool_choice", "tool_choice");
}

}  // namespace
}  // namespace tf::http
