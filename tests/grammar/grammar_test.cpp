// Structured output grammars: "the engine will, for every sampled position of
// a constrained stream, compute the set of tokens allowed next", so the
// grammar is fed one byte at a time; every test here feeds bytes singly.
#include <gtest/gtest.h>

#include <string>

#include "grammar/grammar.h"

namespace tf::grammar {
namespace {

// The index of the first byte the grammar refuses, or -1 when all pass.
int rejected_at(const Grammar& g, std::string_view text) {
    GrammarState s = g.start();
    for (size_t i = 0; i < text.size(); ++i) {
        if (!g.advance(s, text.substr(i, 1))) return static_cast<int>(i);
    }
    return -1;
}

bool accepts(const Grammar& g, std::string_view text) {
    GrammarState s = g.start();
    for (size_t i = 0; i < text.size(); ++i) {
        if (!g.advance(s, text.substr(i, 1))) return false;
    }
    return g.accepts_end(s);
}

// A viable prefix that is not yet a whole sentence.
bool incomplete(const Grammar& g, std::string_view text) {
    GrammarState s = g.start();
    return g.advance(s, text) && !g.accepts_end(s) && g.can_continue(s);
}

std::shared_ptr<const Grammar> schema(std::string_view json) { return Grammar::from_schema(json); }

std::string refusal(std::string_view json) {
    try {
        Grammar::from_schema(json);
    } catch (const GrammarError& e) {
        return e.what();
    }
    return "(accepted)";
}

TEST(Grammar, AnyObjectTakesObjectsOfAnyJson) {
    auto g = Grammar::any_json_object();
    EXPECT_TRUE(accepts(*g, "{}"));
    EXPECT_TRUE(accepts(*g, R"({"a": 1})"));
    EXPECT_TRUE(accepts(*g, R"({"a":[1, {"b":null}],"c":"x", "d":true, "e":-2.5E+10})"));
    EXPECT_FALSE(accepts(*g, "[]"));
    EXPECT_FALSE(accepts(*g, R"("text")"));
    EXPECT_TRUE(incomplete(*g, R"({"a": {"b": [)"));
}

TEST(Grammar, OneOptionalSpaceAfterColonAndCommaAndNoneElsewhere) {
    auto g = Grammar::any_json_object();
    EXPECT_TRUE(accepts(*g, R"({"a":1,"b":2})"));
    EXPECT_TRUE(accepts(*g, R"({"a": 1, "b": [1, 2]})"));
    EXPECT_EQ(rejected_at(*g, R"({"a":  1})"), 6);
    EXPECT_EQ(rejected_at(*g, R"({"a" : 1})"), 4);
    EXPECT_EQ(rejected_at(*g, R"({ "a": 1})"), 1);
    EXPECT_EQ(rejected_at(*g, R"({"a": 1 })"), 7);
    EXPECT_EQ(rejected_at(*g, R"({"a": [ 1]})"), 7);
    EXPECT_EQ(rejected_at(*g, " {}"), 0);
    EXPECT_EQ(rejected_at(*g, "{}\n"), 2);
}

TEST(Grammar, AnyObjectNestsAtMostSixteenDeep) {
    auto g = Grammar::any_json_object();
    std::string deep;
    for (int i = 0; i < 15; ++i) deep += R"({"a":)";
    EXPECT_TRUE(accepts(*g, deep + "{}" + std::string(15, '}')));
    EXPECT_EQ(rejected_at(*g, deep + R"({"a":{)"), static_cast<int>(deep.size()) + 5);
}

TEST(Grammar, AFinishedSentenceTakesNothingMore) {
    auto g = Grammar::any_json_object();
    GrammarState s = g->start();
    EXPECT_FALSE(g->accepts_end(s));
    EXPECT_TRUE(g->can_continue(s));
    ASSERT_TRUE(g->advance(s, "{}"));
    EXPECT_TRUE(g->accepts_end(s));
    EXPECT_FALSE(g->can_continue(s));
    EXPECT_FALSE(g->advance(s, "x"));
}

TEST(Grammar, StatesAreIndependentValues) {
    auto g = schema(R"({"type":"string"})");
    GrammarState a = g->start();
    ASSERT_TRUE(g->advance(a, "\"ab"));
    GrammarState b = a;
    ASSERT_TRUE(g->advance(b, "\""));
    EXPECT_TRUE(g->accepts_end(b));
    EXPECT_FALSE(g->accepts_end(a));
    EXPECT_TRUE(g->advance(a, "c\""));
}

TEST(Grammar, StringsTakeEscapesAndRefuseRawControlBytes) {
    auto g = schema(R"({"type":"string"})");
    EXPECT_TRUE(accepts(*g, R"("")"));
    EXPECT_TRUE(accepts(*g, R"("a \"quoted\" \\ \/ \b\f\n\r\t")"));
    EXPECT_TRUE(accepts(*g, R"("\u00e9\u00C9")"));
    EXPECT_EQ(rejected_at(*g, R"("\x")"), 2);
    EXPECT_EQ(rejected_at(*g, R"("\u00g0")"), 5);
    EXPECT_EQ(rejected_at(*g, "\"a\nb\""), 2);
    EXPECT_EQ(rejected_at(*g, "\"a\tb\""), 2);
    EXPECT_EQ(rejected_at(*g, "'a'"), 0);
}

TEST(Grammar, SurrogateEscapesComeInPairs) {
    auto g = schema(R"({"type":"string"})");
    EXPECT_TRUE(accepts(*g, R"("\ud83d\ude00")"));
    EXPECT_TRUE(accepts(*g, R"("\uD7FF")"));
    EXPECT_EQ(rejected_at(*g, R"("\ud83d")"), 7);  // a high half needs its low half
    EXPECT_EQ(rejected_at(*g, R"("\ud83dx")"), 7);
    EXPECT_EQ(rejected_at(*g, R"("\ude00")"), 4);  // a low half alone
    EXPECT_EQ(rejected_at(*g, R"("\ud83d\u0041")"), 9);
}

TEST(Grammar, StringsAreValidUtf8) {
    auto g = schema(R"({"type":"string"})");
    EXPECT_TRUE(accepts(*g, "\"caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80\""));
    EXPECT_EQ(rejected_at(*g, "\"\xC0\x80\""), 1);          // overlong lead byte
    EXPECT_EQ(rejected_at(*g, "\"\xE0\x80\x80\""), 2);      // overlong three-byte form
    EXPECT_EQ(rejected_at(*g, "\"\xED\xA0\x80\""), 2);      // a surrogate
    EXPECT_EQ(rejected_at(*g, "\"\xF4\x90\x80\x80\""), 2);  // above U+10FFFF
    EXPECT_EQ(rejected_at(*g, "\"\xF5\""), 1);
    EXPECT_EQ(rejected_at(*g, "\"\xC3\""), 2);  // cut off by the quote
    EXPECT_EQ(rejected_at(*g, "\"\x80\""), 1);  // a stray continuation byte
}

TEST(Grammar, StringLengthsCountCodePoints) {
    auto g = schema(R"({"type":"string","minLength":2,"maxLength":3})");
    EXPECT_FALSE(accepts(*g, R"("a")"));
    EXPECT_EQ(rejected_at(*g, R"("a")"), 2);
    EXPECT_TRUE(accepts(*g, R"("ab")"));
    EXPECT_TRUE(accepts(*g, "\"\xC3\xA9\xC3\xA9\xC3\xA9\""));
    EXPECT_TRUE(accepts(*g, R"("\n\ud83d\ude00x")"));
    EXPECT_EQ(rejected_at(*g, R"("abcd")"), 4);
}

TEST(Grammar, NumbersFollowJsonSyntax) {
    auto g = schema(R"({"type":"number"})");
    for (const char* ok : {"0", "-0", "7", "-12", "3.25", "0.5", "1e9", "1E-9", "-2.5e+10", "1234567890123456"}) {
        EXPECT_TRUE(accepts(*g, ok)) << ok;
    }
    EXPECT_EQ(rejected_at(*g, "01"), 1);
    EXPECT_EQ(rejected_at(*g, ".5"), 0);
    EXPECT_EQ(rejected_at(*g, "+1"), 0);
    EXPECT_EQ(rejected_at(*g, "1.e5"), 2);
    EXPECT_EQ(rejected_at(*g, "--1"), 1);
    EXPECT_TRUE(incomplete(*g, "1."));
    EXPECT_TRUE(incomplete(*g, "1e"));
    EXPECT_TRUE(incomplete(*g, "-"));
}

TEST(Grammar, NumbersHaveBoundedDigits) {
    auto g = schema(R"({"type":"number"})");
    EXPECT_EQ(rejected_at(*g, "12345678901234567"), 16);
    EXPECT_TRUE(accepts(*g, "1.1234567890123456"));
    EXPECT_EQ(rejected_at(*g, "1.12345678901234567"), 18);
    EXPECT_TRUE(accepts(*g, "1e99"));
    EXPECT_EQ(rejected_at(*g, "1e123"), 4);
}

TEST(Grammar, IntegersHaveNoFractionOrExponent) {
    auto g = schema(R"({"type":"integer"})");
    EXPECT_TRUE(accepts(*g, "-42"));
    EXPECT_EQ(rejected_at(*g, "1.0"), 1);
    EXPECT_EQ(rejected_at(*g, "1e5"), 1);
    // A 16-digit integer cannot continue, so it is a finished sentence only.
    GrammarState s = g->start();
    ASSERT_TRUE(g->advance(s, "1234567890123456"));
    EXPECT_TRUE(g->accepts_end(s));
    EXPECT_FALSE(g->can_continue(s));
}

TEST(Grammar, ANumberMayEndOrGoOn) {
    auto g = schema(R"({"type":"number"})");
    GrammarState s = g->start();
    ASSERT_TRUE(g->advance(s, "12"));
    EXPECT_TRUE(g->accepts_end(s));
    EXPECT_TRUE(g->can_continue(s));
}

TEST(Grammar, BooleanNullAndTypeLists) {
    auto b = schema(R"({"type":"boolean"})");
    EXPECT_TRUE(accepts(*b, "true"));
    EXPECT_TRUE(accepts(*b, "false"));
    EXPECT_FALSE(accepts(*b, "null"));
    auto n = schema(R"({"type":"null"})");
    EXPECT_TRUE(accepts(*n, "null"));
    EXPECT_EQ(rejected_at(*n, "nul1"), 3);
    auto either = schema(R"({"type":["string","null"]})");
    EXPECT_TRUE(accepts(*either, R"("x")"));
    EXPECT_TRUE(accepts(*either, "null"));
    EXPECT_EQ(rejected_at(*either, "1"), 0);
}

TEST(Grammar, PropertiesComeInSchemaOrderAndRequiredOnesAppear) {
    auto g = schema(R"({"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"},
                        "c":{"type":"boolean"}},"required":["a"],"additionalProperties":false})");
    EXPECT_TRUE(accepts(*g, R"({"b": 1, "a": "x", "c": true})"));
    EXPECT_TRUE(accepts(*g, R"({"a":"x"})"));
    EXPECT_TRUE(accepts(*g, R"({"a": "x", "c": false})"));
    EXPECT_EQ(rejected_at(*g, R"({"a": "x", "b": 1})"), 12);  // b comes before a
    EXPECT_EQ(rejected_at(*g, R"({"b": 1})"), 7);             // a is required
    EXPECT_EQ(rejected_at(*g, R"({"c": true})"), 2);          // a cannot be skipped
    EXPECT_EQ(rejected_at(*g, "{}"), 1);
    EXPECT_EQ(rejected_at(*g, R"({"a": "x", "d": 1})"), 12);  // no extra keys
    EXPECT_EQ(rejected_at(*g, R"({"a": 1})"), 6);             // a is a string
}

TEST(Grammar, AbsentAdditionalPropertiesAllowsExtraKeysWithAnyValue) {
    auto g = schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})");
    EXPECT_TRUE(accepts(*g, R"({"a": 1})"));
    EXPECT_TRUE(accepts(*g, R"({"x": [true, {"y": null}], "a": 1, "z": "w"})"));
    EXPECT_EQ(rejected_at(*g, R"({"x": 1})"), 7);
}

TEST(Grammar, ExtraKeysNeverRepeatADeclaredName) {
    auto g = schema(R"({"type":"object","properties":{"a":{"type":"integer"},"bc":{"type":"null"}}})");
    EXPECT_EQ(rejected_at(*g, R"({"a": "x"})"), 6);  // "a" is an integer, as a declared or an extra key
    EXPECT_EQ(rejected_at(*g, R"({"a": 1, "a": 2})"), 11);
    EXPECT_EQ(rejected_at(*g, R"({"bc": null, "bc": 1})"), 16);
    EXPECT_TRUE(accepts(*g, R"({"ab": "x", "b": [], "bcd": {}, "": 0})"));
    EXPECT_TRUE(accepts(*g, R"({"x": 1, "a": 2})"));
}

TEST(Grammar, AdditionalPropertiesCanBeASchema) {
    auto g = schema(R"({"type":"object","additionalProperties":{"type":"integer"}})");
    EXPECT_TRUE(accepts(*g, R"({"p": 1, "q": 2})"));
    EXPECT_EQ(rejected_at(*g, R"({"p": "1"})"), 6);
}

TEST(Grammar, TypeIsInferredFromObjectAndArrayKeywords) {
    auto o = schema(R"({"properties":{"a":{"const":1}},"required":["a"],"additionalProperties":false})");
    EXPECT_TRUE(accepts(*o, R"({"a": 1})"));
    auto a = schema(R"({"items":{"type":"null"}})");
    EXPECT_TRUE(accepts(*a, "[null, null]"));
    auto anything = schema(R"({"description":"whatever"})");
    EXPECT_TRUE(accepts(*anything, R"([1, "x", {"y": false}])"));
}

TEST(Grammar, ArraysTakeItemsWithinTheirBounds) {
    auto g = schema(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})");
    EXPECT_EQ(rejected_at(*g, "[]"), 1);
    EXPECT_TRUE(accepts(*g, "[1]"));
    EXPECT_TRUE(accepts(*g, "[1, 2,3]"));
    EXPECT_EQ(rejected_at(*g, "[1, 2, 3, 4]"), 8);
    EXPECT_EQ(rejected_at(*g, R"([1, "2"])"), 4);
    auto any = schema(R"({"type":"array"})");
    EXPECT_TRUE(accepts(*any, "[]"));
    EXPECT_TRUE(accepts(*any, R"([[], {}, "s", 1.5])"));
}

TEST(Grammar, EnumAndConstMatchTheValuesJsonText) {
    auto g = schema(R"({"enum":["red","green",7,null,{"k":[1,2]}]})");
    EXPECT_TRUE(accepts(*g, R"("red")"));
    EXPECT_TRUE(accepts(*g, R"("green")"));
    EXPECT_TRUE(accepts(*g, "7"));
    EXPECT_TRUE(accepts(*g, "null"));
    EXPECT_TRUE(accepts(*g, R"({"k":[1,2]})"));
    EXPECT_EQ(rejected_at(*g, R"("blue")"), 1);
    EXPECT_EQ(rejected_at(*g, "70"), 1);
    auto c = schema(R"({"type":"string","const":"fixed"})");
    EXPECT_TRUE(accepts(*c, R"("fixed")"));
    EXPECT_FALSE(accepts(*c, R"("fixe")"));
}

TEST(Grammar, AnyOfAndOneOfTakeAnyAlternative) {
    for (const char* keyword : {"anyOf", "oneOf"}) {
        auto g = schema(std::string(R"({")") + keyword + R"(":[
            {"type":"object","properties":{"kind":{"const":"a"},"n":{"type":"integer"}},"required":["kind","n"],"additionalProperties":false},
            {"type":"object","properties":{"kind":{"const":"b"},"s":{"type":"string"}},"required":["kind","s"],"additionalProperties":false}]})");
        EXPECT_TRUE(accepts(*g, R"({"kind": "a", "n": 1})")) << keyword;
        EXPECT_TRUE(accepts(*g, R"({"kind": "b", "s": "x"})")) << keyword;
        EXPECT_EQ(rejected_at(*g, R"({"kind": "a", "s": "x"})"), 15) << keyword;
    }
}

TEST(Grammar, RefsResolveToDefsAndDefinitions) {
    auto g = schema(R"({"type":"object","properties":{"p":{"$ref":"#/$defs/point"},"q":{"$ref":"#/definitions/flag"}},
        "required":["p","q"],"additionalProperties":false,
        "$defs":{"point":{"type":"array","items":{"type":"number"},"minItems":2,"maxItems":2}},
        "definitions":{"flag":{"type":"boolean"}}})");
    EXPECT_TRUE(accepts(*g, R"({"p": [1, 2], "q": true})"));
    EXPECT_EQ(rejected_at(*g, R"({"p": [1], "q": true})"), 8);
}

TEST(Grammar, RecursiveRefs) {
    auto g = schema(R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object",
        "properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
        "required":["v"],"additionalProperties":false}}})");
    EXPECT_TRUE(accepts(*g, R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": [{"v": 4, "kids": []}]}]})"));
    EXPECT_EQ(rejected_at(*g, R"({"v": 1, "kids": [{}]})"), 19);
}

TEST(Grammar, PrefixAndSuffixWrapTheValue) {
    auto g = Grammar::from_schema(R"({"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],
                                     "additionalProperties":false})",
                                  "<tool_call>\n", "\n</tool_call>");
    EXPECT_TRUE(accepts(*g, "<tool_call>\n{\"x\": 5}\n</tool_call>"));
    EXPECT_EQ(rejected_at(*g, "{\"x\": 5}"), 0);
    EXPECT_FALSE(accepts(*g, "<tool_call>\n{\"x\": 5}"));
    EXPECT_FALSE(accepts(*g, "<tool_call>\n{\"x\": 5}\n</tool_call"));
    // The number may end where the suffix starts.
    EXPECT_TRUE(incomplete(*g, "<tool_call>\n{\"x\": 5"));
}

TEST(Grammar, LongEnumValuesMatchToTheirLastByte) {
    const std::string value(70000, 'x');
    auto g = schema(R"({"enum":[")" + value + R"("]})");
    EXPECT_TRUE(accepts(*g, "\"" + value + "\""));
    EXPECT_FALSE(accepts(*g, "\"" + value + "x\""));
}

TEST(Grammar, AdvancingAtOnceEqualsAdvancingByteByByte) {
    auto g = Grammar::any_json_object();
    const std::string text = R"({"a": [1, 2.5e3, "x\u00e9"], "b": {"c": null}})";
    GrammarState whole = g->start();
    ASSERT_TRUE(g->advance(whole, text));
    GrammarState single = g->start();
    for (char c : text) ASSERT_TRUE(g->advance(single, std::string_view(&c, 1)));
    EXPECT_EQ(whole.frames, single.frames);
    EXPECT_EQ(whole.stack_ends, single.stack_ends);
    EXPECT_TRUE(g->accepts_end(whole));
}

TEST(GrammarRefusal, NamesTheKeywordAndItsPath) {
    EXPECT_EQ(refusal(R"({"type":"object","properties":{"name":{"type":"string","pattern":"^a"}}})"),
              "response_format.json_schema.schema: keyword 'pattern' is not supported (at /properties/name)");
    EXPECT_EQ(refusal(R"({"type":"string","format":"date-time"})"),
              "response_format.json_schema.schema: keyword 'format' is not supported (at the root)");
    EXPECT_EQ(refusal(R"({"type":"array","items":{"type":"integer","minimum":0}})"),
              "response_format.json_schema.schema: keyword 'minimum' is not supported (at /items)");
    EXPECT_EQ(refusal(R"({"anyOf":[{"type":"null"},{"allOf":[]}]})"),
              "response_format.json_schema.schema: keyword 'allOf' is not supported (at /anyOf/1)");
    EXPECT_EQ(refusal(R"({"$defs":{"a/b":{"not":{}}},"$ref":"#/$defs/a~1b"})"),
              "response_format.json_schema.schema: keyword 'not' is not supported (at /$defs/a~1b)");
}

TEST(GrammarRefusal, NamesTheCallersField) {
    try {
        Grammar::from_schema(R"({"uniqueItems":true})", "", "", "tools[0].function.parameters");
        FAIL() << "accepted";
    } catch (const GrammarError& e) {
        EXPECT_STREQ(e.what(), "tools[0].function.parameters: keyword 'uniqueItems' is not supported (at the root)");
    }
}

TEST(GrammarRefusal, BadValuesOfSupportedKeywords) {
    EXPECT_EQ(refusal(R"({"type":"decimal"})"),
              "response_format.json_schema.schema: type 'decimal' is not supported (at /type)");
    EXPECT_EQ(refusal(R"({"type":"object","properties":{},"required":["x"]})"),
              "response_format.json_schema.schema: 'required' names 'x', which is not in 'properties' (at /required)");
    EXPECT_EQ(refusal(R"({"$ref":"https://example.com/s.json"})"),
              "response_format.json_schema.schema: '$ref' 'https://example.com/s.json' is not supported: only "
              "#/$defs/NAME and #/definitions/NAME are (at the root)");
    EXPECT_EQ(refusal(R"({"$ref":"#/$defs/missing"})"),
              "response_format.json_schema.schema: '$ref' target '#/$defs/missing' does not exist (at the root)");
    EXPECT_EQ(refusal(R"({"type":"array","items":[{"type":"string"}]})"),
              "response_format.json_schema.schema: 'items' as a list (tuple validation) is not supported (at /items)");
    EXPECT_EQ(refusal(R"({"type":"array","minItems":3,"maxItems":2})"),
              "response_format.json_schema.schema: 'minItems' is greater than 'maxItems' (at the root)");
    EXPECT_EQ(refusal(R"({"type":"string","maxLength":-1})"),
              "response_format.json_schema.schema: 'maxLength' must be a non-negative integer (at /maxLength)");
    EXPECT_EQ(refusal(R"({"anyOf":[{"type":"null"}],"type":"string"})"),
              "response_format.json_schema.schema: keyword 'type' next to 'anyOf' is not supported (at the root)");
    EXPECT_EQ(refusal("{\"type\":"), "response_format.json_schema.schema: not valid JSON");
    EXPECT_EQ(refusal("false"), "response_format.json_schema.schema: the schema 'false' matches nothing (at the root)");
}

TEST(GrammarRefusal, RefCyclesThatWriteNothing) {
    EXPECT_EQ(refusal(R"({"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}})"),
              "response_format.json_schema.schema: '$ref' '#/$defs/a' reaches itself before writing anything "
              "(at the root)");
    EXPECT_EQ(refusal(R"({"$ref":"#/$defs/a","$defs":{"a":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/b"}]},
                                                     "b":{"oneOf":[{"$ref":"#/$defs/a"}]}}})"),
              "response_format.json_schema.schema: '$ref' '#/$defs/a' reaches itself before writing anything "
              "(at the root)");
}

TEST(Grammar, ManyLookAlikeAlternativesStayBounded) {
    std::string alternatives;
    for (int i = 0; i < 400; ++i) {
        if (i > 0) alternatives += ",";
        alternatives += R"({"type":"array","items":{"const":)" + std::to_string(i % 2) + "}}";
    }
    auto g = schema(R"({"anyOf":[)" + alternatives + "]}");
    GrammarState s = g->start();
    ASSERT_TRUE(g->advance(s, "["));
    EXPECT_LE(s.stack_ends.size(), 256u);
    EXPECT_TRUE(g->advance(s, "1, 1"));
}

TEST(GrammarRefusal, IgnoredAnnotationsAreAccepted) {
    EXPECT_EQ(refusal(R"({"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","title":"T",
                         "description":"d","type":"integer","default":1,"examples":[1]})"),
              "(accepted)");
}

}  // namespace
}  // namespace tf::grammar
