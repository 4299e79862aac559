// Tool calls out of reply text (whole, and streamed at every split point),
// the format read from a template, and the schema of a forced call.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http/tool_calls.h"

namespace tf::http {
namespace {

using nlohmann::json;

// Ids that say which call they were given to.
ToolCallIds counting_ids() {
    return [n = 0]() mutable { return "call_" + std::to_string(n++); };
}

ParsedReply parse(std::string_view text, ToolCallFormat format) { return parse_tool_calls(text, format, counting_ids()); }

// The reply streamed in the given pieces, the deltas joined back.
ParsedReply streamed(const std::vector<std::string>& pieces, ToolCallFormat format) {
    ToolCallStream stream(format, counting_ids());
    std::vector<ReplyDelta> deltas;
    for (const std::string& piece : pieces) {
        for (ReplyDelta& d : stream.feed(piece)) deltas.push_back(std::move(d));
    }
    for (ReplyDelta& d : stream.finish()) deltas.push_back(std::move(d));
    ParsedReply reply;
    for (const ReplyDelta& d : deltas) {
        if (!d.is_tool_call) {
            EXPECT_FALSE(d.content.empty()) << "an empty content delta";
            reply.content += d.content;
        } else if (d.opens) {
            EXPECT_EQ(d.index, static_cast<int32_t>(reply.tool_calls.size()));
            EXPECT_TRUE(d.arguments.empty());
            reply.tool_calls.push_back({d.id, d.name, ""});
        } else {
            EXPECT_TRUE(d.id.empty() && d.name.empty());
            reply.tool_calls.at(static_cast<size_t>(d.index)).arguments += d.arguments;
        }
    }
    return reply;
}

void expect_same(const ParsedReply& a, const ParsedReply& b, const std::string& where) {
    EXPECT_EQ(a.content, b.content) << where;
    ASSERT_EQ(a.tool_calls.size(), b.tool_calls.size()) << where;
    for (size_t i = 0; i < a.tool_calls.size(); ++i) {
        EXPECT_EQ(a.tool_calls[i].id, b.tool_calls[i].id) << where;
        EXPECT_EQ(a.tool_calls[i].name, b.tool_calls[i].name) << where;
        EXPECT_EQ(a.tool_calls[i].arguments, b.tool_calls[i].arguments) << where;
    }
}

// Streaming `text` cut at any one point, and byte by byte, gives what
// parsing it whole gives.
void expect_every_split_matches(const std::string& text, ToolCallFormat format) {
    const ParsedReply whole = parse(text, format);
    for (size_t cut = 0; cut <= text.size(); ++cut) {
        expect_same(streamed({text.substr(0, cut), text.substr(cut)}, format), whole,
                    "cut at " + std::to_string(cut) + " of: " + text);
    }
    std::vector<std::string> bytes;
    for (char c : text) bytes.emplace_back(1, c);
    expect_same(streamed(bytes, format), whole, "byte by byte: " + text);
}

const std::string kWeather = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

TEST(ToolCallFormat, ReadFromTheTemplate) {
    EXPECT_EQ(tool_call_format("...return a json object within <tool_call></tool_call> XML tags"), ToolCallFormat::hermes);
    EXPECT_EQ(tool_call_format("{%- if message.role == 'ipython' %}"), ToolCallFormat::llama3);
    EXPECT_EQ(tool_call_format("{{ '<|python_tag|>' + tool_call.name }}"), ToolCallFormat::llama3);
    EXPECT_EQ(tool_call_format("{% for m in messages %}{{ m.content }}{% endfor %}"), ToolCallFormat::none);
}

TEST(HermesToolCalls, OneCallIsTheWholeReply) {
    const ParsedReply r = parse(kWeather, ToolCallFormat::hermes);
    EXPECT_EQ(r.content, "");
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].id, "call_0");
    EXPECT_EQ(r.tool_calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(r.tool_calls[0].arguments), json({{"city", "Paris"}}));
}

TEST(HermesToolCalls, SeveralCallsWithTextAroundThem) {
    const std::string text = "Let me check.\n" + kWeather + "\n" +
                             "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n";
    const ParsedReply r = parse(text, ToolCallFormat::hermes);
    EXPECT_EQ(r.content, "Let me check.");
    ASSERT_EQ(r.tool_calls.size(), 2u);
    EXPECT_EQ(r.tool_calls[1].id, "call_1");
    EXPECT_EQ(r.tool_calls[1].name, "get_time");
    EXPECT_EQ(r.tool_calls[1].arguments, "{}");
}

TEST(HermesToolCalls, ArgumentsAsAStringOrAbsentAreAnObject) {
    const ParsedReply quoted =
        parse("<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>", ToolCallFormat::hermes);
    ASSERT_EQ(quoted.tool_calls.size(), 1u);
    EXPECT_EQ(quoted.tool_calls[0].arguments, "{\"x\":1}");
    const ParsedReply absent = parse("<tool_call>{\"name\": \"f\"}</tool_call>", ToolCallFormat::hermes);
    ASSERT_EQ(absent.tool_calls.size(), 1u);
    EXPECT_EQ(absent.tool_calls[0].arguments, "{}");
}

TEST(HermesToolCalls, NonAsciiArgumentsStayUtf8) {
    const ParsedReply r =
        parse("<tool_call>{\"name\": \"f\", \"arguments\": {\"city\": \"Zürich\"}}</tool_call>", ToolCallFormat::hermes);
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].arguments, "{\"city\": \"Zürich\"}");
}

TEST(HermesToolCalls, TextWithoutCallsIsContentUnchanged) {
    for (const std::string& text : std::vector<std::string>{"", "plain", "  spaced out \n\n", "a < b and <tool", "x <tool_cal"}) {
        const ParsedReply r = parse(text, ToolCallFormat::hermes);
        EXPECT_EQ(r.content, text);
        EXPECT_TRUE(r.tool_calls.empty());
    }
}

TEST(HermesToolCalls, MalformedCallsStayContent) {
    for (const std::string& text : std::vector<std::string>{
             "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}\n</tool_call>",   // unbalanced JSON
             "<tool_call>\nnot json\n</tool_call>",
             "<tool_call>[1, 2]</tool_call>",                                              // not an object
             "<tool_call>{\"arguments\": {}}</tool_call>",                                  // no name
             "<tool_call>{\"name\": 7, \"arguments\": {}}</tool_call>",                     // name not a string
             "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",                // arguments not an object
             "<tool_call>{\"name\": \"f\", \"arguments\": \"nope\"}</tool_call>",           // string, not an object
             "<tool_call>{\"name\": \"f\", \"arguments\": {}, \"extra\": 1}</tool_call>",   // unknown key
             "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1",                    // cut by max_tokens
         }) {
        const ParsedReply r = parse(text, ToolCallFormat::hermes);
        EXPECT_EQ(r.content, text);
        EXPECT_TRUE(r.tool_calls.empty()) << text;
    }
}

TEST(HermesToolCalls, AGoodCallNextToABadOneIsStillACall) {
    const std::string bad = "<tool_call>oops</tool_call>";
    const ParsedReply r = parse(bad + "\n" + kWeather, ToolCallFormat::hermes);
    EXPECT_EQ(r.content, bad);
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].name, "get_weather");
}

TEST(HermesToolCalls, AnUnclosedCallAtTheEndCountsWhenItParses) {
    const ParsedReply r = parse("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n", ToolCallFormat::hermes);
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.content, "");
}

TEST(HermesToolCalls, ThinkingBeforeTheCallIsContent) {
    const ParsedReply r = parse("<think>\nParis weather.\n</think>\n\n" + kWeather, ToolCallFormat::hermes);
    EXPECT_EQ(r.content, "<think>\nParis weather.\n</think>");
    EXPECT_EQ(r.tool_calls.size(), 1u);
}

TEST(HermesToolCalls, StreamingMatchesTheWholeReplyAtEverySplitPoint) {
    for (const std::string& text : std::vector<std::string>{
             kWeather,
             "Let me check.\n" + kWeather + "\n" + kWeather + "\n",
             "Sure: " + kWeather + " and then some text.",
             std::string("<tool_call>oops</tool_call>\n") + kWeather,
             std::string("no calls here, only a < sign and <tool"),
             std::string("<tool_call>\n{\"name\": \"f\", \"argu"),  // cut before the arguments open
             std::string("<tool_call>\n{\"arguments\": {\"x\": 1}, \"name\": \"f\"}\n</tool_call>"),
             std::string("<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"}{\\\"\", \"n\": [1, {}]}}</tool_call>"),
             std::string("  leading and trailing  "),
         }) {
        expect_every_split_matches(text, ToolCallFormat::hermes);
    }
}

TEST(HermesToolCallStream, HoldsAPossibleOpeningTagUntilItIsDecided) {
    ToolCallStream stream(ToolCallFormat::hermes, counting_ids());
    std::vector<ReplyDelta> first = stream.feed("Hi <tool");
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].content, "Hi");  // the space waits too: it may separate a call
    std::vector<ReplyDelta> second = stream.feed("box>");
    ASSERT_EQ(second.size(), 1u);
    EXPECT_EQ(second[0].content, " <toolbox>");
}

TEST(HermesToolCallStream, ACallGoesOutAsAnOpeningPieceThenItsArguments) {
    ToolCallStream stream(ToolCallFormat::hermes, counting_ids());
    EXPECT_TRUE(stream.feed("<tool_call>\n{\"name\": \"get_weather\", ").empty());
    const std::vector<ReplyDelta> out = stream.feed("\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(out[0].is_tool_call && out[0].opens);
    EXPECT_EQ(out[0].index, 0);
    EXPECT_EQ(out[0].id, "call_0");
    EXPECT_EQ(out[0].name, "get_weather");
    EXPECT_EQ(out[0].arguments, "");
    EXPECT_TRUE(out[1].is_tool_call && !out[1].opens);
    EXPECT_EQ(out[1].arguments, "{\"city\": \"Paris\"}");  // as the model wrote it
    EXPECT_TRUE(stream.finish().empty());
    EXPECT_EQ(stream.calls(), 1);
}

// The arguments of each delta in `deltas`, in order.
std::vector<std::string> argument_pieces(const std::vector<ReplyDelta>& deltas) {
    std::vector<std::string> out;
    for (const ReplyDelta& d : deltas) {
        if (d.is_tool_call && !d.opens) out.push_back(d.arguments);
    }
    return out;
}

TEST(HermesToolCallStream, ArgumentsStreamAsTheyComeOnceTheNameAndTheirObjectHaveOpened) {
    ToolCallStream stream(ToolCallFormat::hermes, counting_ids());
    EXPECT_TRUE(stream.feed("<tool_call>\n{\"name\": \"write\", \"argum").empty());
    const std::vector<ReplyDelta> opened = stream.feed("ents\": {\"text\": \"a}");
    ASSERT_EQ(opened.size(), 2u);
    EXPECT_TRUE(opened[0].opens);
    EXPECT_EQ(opened[0].name, "write");
    EXPECT_EQ(opened[1].arguments, "{\"text\": \"a}");
    EXPECT_EQ(argument_pieces(stream.feed("b\"}")), std::vector<std::string>{"b\"}"});
    // After the arguments' object: the body's last brace and the close tag,
    // which may come cut.
    EXPECT_TRUE(stream.feed("}\n</tool").empty());
    EXPECT_TRUE(stream.feed("_call>").empty());
    const std::vector<ReplyDelta> after = stream.feed(" Done.");
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0].content, "Done.");
    EXPECT_TRUE(stream.finish().empty());
    EXPECT_EQ(stream.calls(), 1);
}

TEST(HermesToolCallStream, StreamedPiecesJoinToTheWholeReplysArgumentsAtEverySplitPoint) {
    const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2], \"b\": {\"c\": \"}\"}}}\n</tool_call>";
    const ParsedReply whole = parse(text, ToolCallFormat::hermes);
    ASSERT_EQ(whole.tool_calls.size(), 1u);
    EXPECT_EQ(whole.tool_calls[0].arguments, "{\"a\": [1, 2], \"b\": {\"c\": \"}\"}}");
    std::vector<std::string> bytes;
    for (char c : text) bytes.emplace_back(1, c);
    EXPECT_EQ(streamed(bytes, ToolCallFormat::hermes).tool_calls.at(0).arguments, whole.tool_calls[0].arguments);
}

// A stream cannot take back a call it has begun to send: once the name
// and the arguments' opening brace have gone out, the call stands, where a
// whole reply, checked whole, would have kept the text as content.
TEST(HermesToolCallStream, ACallTakenAsItCameStandsWhenItsEndGoesWrong) {
    const std::string cut = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1";
    EXPECT_TRUE(parse(cut, ToolCallFormat::hermes).tool_calls.empty());
    const ParsedReply cut_stream = streamed({cut.substr(0, 40), cut.substr(40)}, ToolCallFormat::hermes);
    ASSERT_EQ(cut_stream.tool_calls.size(), 1u);
    EXPECT_EQ(cut_stream.tool_calls[0].arguments, "{\"x\": 1");
    EXPECT_EQ(cut_stream.content, "");

    const std::string extra = "<tool_call>{\"name\": \"f\", \"arguments\": {}, \"extra\": 1}</tool_call> after";
    EXPECT_TRUE(parse(extra, ToolCallFormat::hermes).tool_calls.empty());
    const ParsedReply extra_stream = streamed({extra.substr(0, 40), extra.substr(40)}, ToolCallFormat::hermes);
    ASSERT_EQ(extra_stream.tool_calls.size(), 1u);
    EXPECT_EQ(extra_stream.tool_calls[0].arguments, "{}");
    EXPECT_EQ(extra_stream.content, "after");
}

TEST(Llama3ToolCalls, TheWholeReplyIsOneCall) {
    for (const std::string& text : std::vector<std::string>{"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
                                   "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
                                   "\n {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}} \n"}) {
        const ParsedReply r = parse(text, ToolCallFormat::llama3);
        EXPECT_EQ(r.content, "") << text;
        ASSERT_EQ(r.tool_calls.size(), 1u) << text;
        EXPECT_EQ(r.tool_calls[0].name, "get_weather");
        EXPECT_EQ(r.tool_calls[0].arguments, "{\"city\": \"Paris\"}");  // as the model wrote it
    }
}

TEST(Llama3ToolCalls, OtherRepliesAreContent) {
    for (const std::string& text : std::vector<std::string>{"The weather is fine.", "{\"name\": \"Bob\", \"age\": 3}", "{\"name\": \"f\"} and more",
                                   "<|python_tag|>print(1)", "Here: {\"name\": \"f\", \"parameters\": {}}", "{"}) {
        const ParsedReply r = parse(text, ToolCallFormat::llama3);
        EXPECT_EQ(r.content, text);
        EXPECT_TRUE(r.tool_calls.empty()) << text;
    }
}

TEST(Llama3ToolCalls, StreamingMatchesTheWholeReplyAtEverySplitPoint) {
    for (const std::string& text : std::vector<std::string>{"{\"name\": \"f\", \"parameters\": {\"a\": [1, 2]}}",
                                   "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}", "plain text reply ",
                                   " \n{\"name\": \"f\", \"arguments\": {\"s\": \"}{\\\"\"}} \n",
                                   "{\"parameters\": {\"a\": 1}, \"name\": \"f\"}",  // another shape: checked whole
                                   "{\"name\": \"Bob\"} is a name", "<|python"}) {
        expect_every_split_matches(text, ToolCallFormat::llama3);
    }
}

TEST(Llama3ToolCallStream, ArgumentsStreamAsTheyComeOnceTheNameAndTheirObjectHaveOpened) {
    ToolCallStream stream(ToolCallFormat::llama3, counting_ids());
    EXPECT_TRUE(stream.feed("<|python_tag|>{\"name\": \"write\", \"param").empty());
    const std::vector<ReplyDelta> opened = stream.feed("eters\": {\"text\": \"a}");
    ASSERT_EQ(opened.size(), 2u);
    EXPECT_TRUE(opened[0].is_tool_call && opened[0].opens);
    EXPECT_EQ(opened[0].id, "call_0");
    EXPECT_EQ(opened[0].name, "write");
    EXPECT_EQ(opened[1].arguments, "{\"text\": \"a}");
    EXPECT_EQ(argument_pieces(stream.feed("b\", \"n\": ")), std::vector<std::string>{"b\", \"n\": "});
    EXPECT_EQ(argument_pieces(stream.feed("[1]}")), std::vector<std::string>{"[1]}"});
    // The call object's own closing brace ends the call and is not sent.
    EXPECT_TRUE(stream.feed("}").empty());
    EXPECT_TRUE(stream.finish().empty());
    EXPECT_EQ(stream.calls(), 1);
}

// Every piece of a streamed call is a piece of its arguments: nothing of
// the call reaches content, wherever the model's tokens happen to split.
TEST(Llama3ToolCallStream, StreamedPiecesJoinToTheWholeReplysArgumentsAtEverySplitPoint) {
    const std::string text = "{\"name\": \"f\", \"parameters\": {\"a\": [1, 2], \"b\": {\"c\": \"}\"}}}";
    const ParsedReply whole = parse(text, ToolCallFormat::llama3);
    ASSERT_EQ(whole.tool_calls.size(), 1u);
    EXPECT_EQ(whole.tool_calls[0].arguments, "{\"a\": [1, 2], \"b\": {\"c\": \"}\"}}");
    std::vector<std::string> bytes;
    for (char c : text) bytes.emplace_back(1, c);
    ToolCallStream stream(ToolCallFormat::llama3, counting_ids());
    size_t pieces = 0;
    for (const std::string& b : bytes) {
        for (const ReplyDelta& d : stream.feed(b)) {
            EXPECT_TRUE(d.is_tool_call) << "content: " << d.content;
            pieces += d.is_tool_call && !d.opens;
        }
    }
    EXPECT_TRUE(stream.finish().empty());
    EXPECT_GT(pieces, 10u);  // streamed as it came, not held to the end
    expect_same(streamed(bytes, ToolCallFormat::llama3), whole, "byte by byte");
}

TEST(Llama3ToolCallStream, ACallCutByMaxTokensStandsWithTheArgumentsItHas) {
    const std::string cut = "{\"name\": \"f\", \"parameters\": {\"x\": 1";
    EXPECT_TRUE(parse(cut, ToolCallFormat::llama3).tool_calls.empty());  // whole, it does not parse
    const ParsedReply r = streamed({cut.substr(0, 30), cut.substr(30)}, ToolCallFormat::llama3);
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].arguments, "{\"x\": 1");
    EXPECT_EQ(r.content, "");
}

TEST(Llama3ToolCallStream, TextAfterAStreamedCallIsContent) {
    const std::string text = "{\"name\": \"f\", \"parameters\": {}} Done.";
    const ParsedReply r = streamed({text.substr(0, 30), text.substr(30)}, ToolCallFormat::llama3);
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].arguments, "{}");
    EXPECT_EQ(r.content, "Done.");
}

TEST(Llama3ToolCallStream, JsonThatIsNotACallIsHeldWholeAndStaysContent) {
    ToolCallStream stream(ToolCallFormat::llama3, counting_ids());
    EXPECT_TRUE(stream.feed("{\"name\": \"Bob\", ").empty());
    EXPECT_TRUE(stream.feed("\"age\": 3}").empty());
    const std::vector<ReplyDelta> out = stream.finish();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].content, "{\"name\": \"Bob\", \"age\": 3}");
    EXPECT_EQ(stream.calls(), 0);
}

TEST(Llama3ToolCallStream, PlainTextStreamsAtOnce) {
    ToolCallStream stream(ToolCallFormat::llama3, counting_ids());
    const std::vector<ReplyDelta> out = stream.feed("The answer");
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].content, "The answer");
}

TEST(NoToolCallFormat, PassesTextThrough) {
    const std::string text = "  " + kWeather + " \n";
    const ParsedReply r = parse(text, ToolCallFormat::none);
    EXPECT_EQ(r.content, text);
    EXPECT_TRUE(r.tool_calls.empty());
}

TEST(ToolCallIds, AreCallAnd24HexDigitsAndDiffer) {
    const std::string a = random_tool_call_id();
    const std::string b = random_tool_call_id();
    ASSERT_EQ(a.size(), 29u);
    EXPECT_EQ(a.rfind("call_", 0), 0u);
    EXPECT_EQ(a.find_first_not_of("0123456789abcdef", 5), std::string::npos);
    EXPECT_NE(a, b);
}

const std::vector<ToolSchema> kTools = {
    {"get_weather", R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})"},
    {"get_time", ""},
};

TEST(ForcedToolCall, ANamedFunctionIsItsNameAndParameters) {
    const std::string name = "get_weather";
    const ForcedToolCall forced = forced_tool_call(ToolCallFormat::hermes, kTools, &name);
    EXPECT_EQ(forced.schema_json,
              R"({"type":"object","properties":{"name":{"const":"get_weather"},"arguments":{"type":"object",)"
              R"("properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}},)"
              R"("required":["name","arguments"],"additionalProperties":false})")
        << "the arguments take only the declared properties";
    EXPECT_EQ(forced.prefix, "<tool_call>\n");
    EXPECT_EQ(forced.suffix, "\n</tool_call>");
}

TEST(ForcedToolCall, RequiredIsAnyOfTheTools) {
    const json schema = json::parse(forced_tool_call(ToolCallFormat::hermes, kTools).schema_json);
    ASSERT_EQ(schema["anyOf"].size(), 2u);
    EXPECT_EQ(schema["anyOf"][0]["properties"]["name"]["const"], "get_weather");
    EXPECT_EQ(schema["anyOf"][1]["properties"]["name"]["const"], "get_time");
    // No parameters given: the arguments are an empty object.
    EXPECT_EQ(schema["anyOf"][1]["properties"]["arguments"],
              json({{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}}));
}

TEST(ForcedToolCall, Llama3WritesParametersWithoutATag) {
    const ForcedToolCall forced = forced_tool_call(ToolCallFormat::llama3, kTools);
    const json schema = json::parse(forced.schema_json);
    EXPECT_EQ(schema["anyOf"][0]["required"], json::array({"name", "parameters"}));
    EXPECT_TRUE(schema["anyOf"][0]["properties"].contains("parameters"));
    EXPECT_EQ(forced.prefix, "");
    EXPECT_EQ(forced.suffix, "");
}

TEST(ForcedToolCall, NestedObjectsAreClosedAndAnExplicitAdditionalPropertiesIsKept) {
    const std::vector<ToolSchema> tools = {{"plan", R"({"type":"object","properties":{
        "steps":{"type":"array","items":{"type":"object","properties":{"do":{"type":"string"}}}},
        "meta":{"type":"object","additionalProperties":true},
        "either":{"anyOf":[{"type":"object","properties":{"x":{"type":"integer"}}},{"type":"null"}]}}})"}};
    const std::string name = "plan";
    const json arguments = json::parse(forced_tool_call(ToolCallFormat::hermes, tools, &name).schema_json)["properties"]["arguments"];
    EXPECT_EQ(arguments["additionalProperties"], false);
    EXPECT_EQ(arguments["properties"]["steps"]["items"]["additionalProperties"], false);
    EXPECT_EQ(arguments["properties"]["meta"]["additionalProperties"], true);
    EXPECT_EQ(arguments["properties"]["either"]["anyOf"][0]["additionalProperties"], false);
    EXPECT_FALSE(arguments["properties"]["either"]["anyOf"][1].contains("additionalProperties"));
}

TEST(ForcedToolCall, AnOutputMatchingTheSchemaParsesAsTheCall) {
    const std::string name = "get_weather";
    const ForcedToolCall forced = forced_tool_call(ToolCallFormat::hermes, kTools, &name);
    const ParsedReply r =
        parse(forced.prefix + R"({"name": "get_weather", "arguments": {"city": "Oslo"}})" + forced.suffix, ToolCallFormat::hermes);
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].name, "get_weather");
}

}  // namespace
}  // namespace tf::http
