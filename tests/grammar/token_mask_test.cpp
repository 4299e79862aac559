// The token mask: "for every sampled position of a constrained stream,
// compute the set of tokens allowed next, and sample only among them".
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>

#include "grammar/grammar.h"
#include "grammar/token_mask.h"
#include "tokenizer/tokenizer.h"

namespace tf::grammar {
namespace {

constexpr const char* kIntegerA =
    R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false})";

std::set<int32_t> mask_ids(const TokenMasker& masker, const Grammar& g, const GrammarState& s) {
    std::vector<uint64_t> bits;
    masker.allowed(g, s, bits);
    EXPECT_EQ(bits.size(), static_cast<size_t>((masker.vocab_size() + 63) / 64));
    std::set<int32_t> ids;
    for (int32_t id = 0; id < masker.vocab_size(); ++id) {
        if (bits[id / 64] >> (id % 64) & 1) ids.insert(id);
    }
    return ids;
}

// Every token asked one by one, without the trie.
std::set<int32_t> brute_force_ids(const TokenMasker& masker, const Grammar& g, const GrammarState& s) {
    std::set<int32_t> ids;
    for (int32_t id = 0; id < masker.vocab_size(); ++id) {
        if (masker.allows(g, s, id)) ids.insert(id);
    }
    return ids;
}

GrammarState after(const Grammar& g, std::string_view text) {
    GrammarState s = g.start();
    EXPECT_TRUE(g.advance(s, text)) << text;
    return s;
}

TEST(TokenMask, HandMadeVocabularyGetsExactlyTheAllowedTokens) {
    //                                    0    1    2      3        4    5     6    7     8    9   10
    TokenMasker masker(std::vector<std::string>{"{", "}", "{\"", "\"a\"", ":", ": ", "1", "12", "x", "", "<eos>",
                                                //  11    12   13   14    15          16    17   18
                                                "\"", "a", " ", "1}", "\"a\": ", "{}", "0", "01"},
                       {10});
    auto g = Grammar::from_schema(kIntegerA);
    using Ids = std::set<int32_t>;
    EXPECT_EQ(mask_ids(masker, *g, g->start()), (Ids{0, 2}));
    EXPECT_EQ(mask_ids(masker, *g, after(*g, "{")), (Ids{3, 11, 15}));
    EXPECT_EQ(mask_ids(masker, *g, after(*g, R"({"a")")), (Ids{4, 5}));
    EXPECT_EQ(mask_ids(masker, *g, after(*g, R"({"a":)")), (Ids{6, 7, 13, 14, 17}));
    EXPECT_EQ(mask_ids(masker, *g, after(*g, R"({"a": 1)")), (Ids{1, 6, 7, 14, 17, 18}));
    EXPECT_EQ(mask_ids(masker, *g, after(*g, R"({"a": 1})")), (Ids{10}));
}

TEST(TokenMask, EndTokensFollowAcceptsEndAndEmptyTokensNeverPass) {
    TokenMasker masker({"1", "", "<eos>", "2"}, {2});
    auto g = Grammar::from_schema(R"({"type":"integer"})");
    EXPECT_FALSE(masker.allows(*g, g->start(), 2));
    EXPECT_FALSE(masker.allows(*g, g->start(), 1));
    const GrammarState one = after(*g, "1");
    EXPECT_TRUE(masker.allows(*g, one, 2));
    EXPECT_FALSE(masker.allows(*g, one, 1));
    EXPECT_FALSE(masker.allows(*g, one, 4));  // outside the vocabulary
    EXPECT_FALSE(masker.allows(*g, one, -1));
    EXPECT_EQ(mask_ids(masker, *g, one), (std::set<int32_t>{0, 2, 3}));
}

TEST(TokenMask, InsideAStringPlainTokensPassAndTheRestAreWalked) {
    TokenMasker masker({"\"", "ab", "a\"", "\\n", "\\", "\xC3\xA9", "\xC3", "\x01", "<eos>", "\"x", "\xA9", "a\nb"},
                       {8});
    auto g = Grammar::from_schema(R"({"type":"string"})");
    const GrammarState open = after(*g, "\"");
    EXPECT_EQ(g->plain_text_room(open), Grammar::kAnyPlainText);
    EXPECT_EQ(mask_ids(masker, *g, open), (std::set<int32_t>{0, 1, 2, 3, 4, 5, 6}));
    const GrammarState half = after(*g, "\"\xC3");
    EXPECT_EQ(g->plain_text_room(half), 0u);
    EXPECT_EQ(mask_ids(masker, *g, half), (std::set<int32_t>{10}));
    EXPECT_EQ(mask_ids(masker, *g, after(*g, "\"ab\"")), (std::set<int32_t>{8}));
}

TEST(TokenMask, BoundedStringsAreWalkedTokenByToken) {
    TokenMasker masker({"\"", "ab", "a\"", "\\n", "\\", "\xC3\xA9", "\xC3", "abc", "<eos>"}, {8});
    auto g = Grammar::from_schema(R"({"type":"string","maxLength":2})");
    const GrammarState open = after(*g, "\"");
    EXPECT_EQ(g->plain_text_room(open), 2u);
    EXPECT_EQ(mask_ids(masker, *g, open), (std::set<int32_t>{0, 1, 2, 3, 4, 5, 6}));
    const GrammarState one = after(*g, "\"a");
    EXPECT_EQ(g->plain_text_room(one), 1u);
    EXPECT_EQ(mask_ids(masker, *g, one), (std::set<int32_t>{0, 2, 3, 4, 5, 6}));
    EXPECT_EQ(mask_ids(masker, *g, after(*g, "\"ab")), (std::set<int32_t>{0}));
}

TEST(TokenMask, PlainTextABoundedStringRefusesMayPassAnotherAlternative) {
    TokenMasker masker({"\"", "ab", "abc", "abc\"", "x", "<eos>", "xy"}, {5});
    auto g = Grammar::from_schema(R"({"anyOf":[{"type":"string","maxLength":1},{"const":"abc"}]})");
    const GrammarState open = after(*g, "\"");
    EXPECT_EQ(g->plain_text_room(open), 0u);  // two parses: no shortcut
    // "ab" and "abc" are too long for the string but spell the const.
    EXPECT_EQ(mask_ids(masker, *g, open), (std::set<int32_t>{0, 1, 2, 3, 4}));
}

class TinycodeMask : public ::testing::Test {
protected:
    static const tokenizer::Tokenizer& tok() {
        static const tokenizer::Tokenizer t =
            tokenizer::Tokenizer::load(std::string(TF_SOURCE_DIR_FOR_TESTS) + "/models/tinycode");
        return t;
    }
    static int32_t eos() { return static_cast<int32_t>(*tok().special_ids().eos); }
    static const TokenMasker& masker() {
        static const TokenMasker m(TokenMasker::bytes_of(tok()), {eos()});
        return m;
    }
};

TEST_F(TinycodeMask, TokenBytesAreTheDecodedBytesAndEmptyForSpecialTokens) {
    const std::vector<std::string> bytes = TokenMasker::bytes_of(tok());
    ASSERT_EQ(bytes.size(), tok().vocab_size());
    EXPECT_EQ(bytes[eos()], "");
    const std::vector<tokenizer::TokenId> the = tok().encode(" the");
    ASSERT_EQ(the.size(), 1u);
    EXPECT_EQ(bytes[the[0]], " the");  // the byte-level 'Ġ' is undone
    const std::vector<tokenizer::TokenId> brace = tok().encode("{");
    ASSERT_EQ(brace.size(), 1u);
    EXPECT_EQ(bytes[brace[0]], "{");
}

TEST_F(TinycodeMask, MaskEqualsAskingEveryTokenAlone) {
    auto g = Grammar::from_schema(kIntegerA);
    for (const char* text : {"", "{", "{\"", R"({"a")", R"({"a": )", R"({"a": 1)", R"({"a": 12})"}) {
        const GrammarState s = after(*g, text);
        EXPECT_EQ(mask_ids(masker(), *g, s), brute_force_ids(masker(), *g, s)) << "after '" << text << "'";
    }
    auto bounded = Grammar::from_schema(R"({"type":"array","items":{"type":"string","minLength":2,"maxLength":5}})");
    for (const char* text : {"[", "[\"", "[\"a", "[\"abcd", "[\"abcde", "[\"ab\\"}) {
        const GrammarState s = after(*bounded, text);
        EXPECT_EQ(mask_ids(masker(), *bounded, s), brute_force_ids(masker(), *bounded, s)) << "after '" << text << "'";
    }
    auto any = Grammar::any_json_object();
    for (const char* text : {"{", R"({"k)", R"({"k": "abc)", R"({"k": "a\)", R"({"k": -1.5e)", R"({"k": [tr)"}) {
        const GrammarState s = after(*any, text);
        EXPECT_EQ(mask_ids(masker(), *any, s), brute_force_ids(masker(), *any, s)) << "after '" << text << "'";
    }
}

TEST_F(TinycodeMask, AtTheStartOnlyTokensThatOpenTheObjectPass) {
    auto g = Grammar::from_schema(kIntegerA);
    const std::set<int32_t> ids = mask_ids(masker(), *g, g->start());
    ASSERT_FALSE(ids.empty());
    const std::vector<std::string> bytes = TokenMasker::bytes_of(tok());
    for (int32_t id : ids) {
        const std::string& b = bytes[id];
        // Each allowed token is a prefix of {"a": or starts with it.
        const std::string lead = R"({"a": )";
        EXPECT_TRUE(lead.starts_with(b) || b.starts_with(lead) || b.starts_with(R"({"a":)")) << b;
    }
    EXPECT_TRUE(ids.contains(tok().encode("{").front()));
}

// --- property: random walks through the mask stay inside the schema ---

using nlohmann::json;

size_t code_points(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

// The subset of JSON Schema these tests use.
bool valid(const json& v, const json& schema) {
    if (schema.contains("const")) return v == schema["const"];
    if (schema.contains("enum")) {
        for (const json& option : schema["enum"]) {
            if (v == option) return true;
        }
        return false;
    }
    if (schema.contains("anyOf")) {
        for (const json& option : schema["anyOf"]) {
            if (valid(v, option)) return true;
        }
        return false;
    }
    if (!schema.contains("type")) return true;
    const std::string type = schema["type"];
    if (type == "integer") return v.is_number_integer();
    if (type == "number") return v.is_number();
    if (type == "boolean") return v.is_boolean();
    if (type == "null") return v.is_null();
    if (type == "string") {
        if (!v.is_string()) return false;
        const size_t n = code_points(v.get<std::string>());
        return n >= schema.value("minLength", 0u) && n <= schema.value("maxLength", 1u << 30);
    }
    if (type == "array") {
        if (!v.is_array() || v.size() < schema.value("minItems", 0u) || v.size() > schema.value("maxItems", 1u << 30)) {
            return false;
        }
        for (const json& item : v) {
            if (schema.contains("items") && !valid(item, schema["items"])) return false;
        }
        return true;
    }
    if (!v.is_object()) return false;
    for (const json& name : schema.value("required", json::array())) {
        if (!v.contains(name.get<std::string>())) return false;
    }
    const json props = schema.value("properties", json::object());
    for (const auto& [key, value] : v.items()) {
        if (props.contains(key)) {
            if (!valid(value, props[key])) return false;
        } else if (schema.value("additionalProperties", true) == false) {
            return false;
        }
    }
    return true;
}

// How far a state is from a finished sentence: its shallowest parse stack.
size_t depth(const GrammarState& s) {
    if (s.complete) return 0;
    size_t shallowest = SIZE_MAX, begin = 0;
    for (uint32_t end : s.stack_ends) {
        shallowest = std::min<size_t>(shallowest, end - begin);
        begin = end;
    }
    return shallowest;
}

// Samples uniformly among the allowed tokens; after `patience` tokens it
// takes the end token when allowed, else one of the tokens that leave the
// shallowest state, so that walks finish.
std::string random_reply(const Grammar& g, const TokenMasker& masker, int32_t end,
                         const std::vector<std::string>& bytes, std::mt19937& rng, size_t patience) {
    GrammarState s = g.start();
    std::string text;
    std::vector<uint64_t> bits;
    for (size_t step = 0; step < 2000; ++step) {
        masker.allowed(g, s, bits);
        const bool end_allowed = bits[end / 64] >> (end % 64) & 1;
        std::vector<int32_t> ids;
        for (int32_t id = 0; id < masker.vocab_size(); ++id) {
            if (id != end && bits[id / 64] >> (id % 64) & 1) ids.push_back(id);
        }
        if (end_allowed && (step >= patience || ids.empty())) return text;
        EXPECT_FALSE(ids.empty()) << "dead end after: " << text;
        if (ids.empty()) return text;
        if (step >= patience) {
            std::vector<int32_t> shallowest;
            size_t best = SIZE_MAX;
            for (int32_t id : ids) {
                GrammarState next = s;
                EXPECT_TRUE(g.advance(next, bytes[id]));
                const size_t d = depth(next);
                if (d < best) shallowest.clear(), best = d;
                if (d == best) shallowest.push_back(id);
            }
            ids = std::move(shallowest);
        }
        const int32_t id = ids[rng() % ids.size()];
        EXPECT_TRUE(g.advance(s, bytes[id]));
        text += bytes[id];
    }
    ADD_FAILURE() << "no end after 2000 tokens: " << text;
    return text;
}

TEST_F(TinycodeMask, RandomWalksThroughTheMaskSatisfyTheSchema) {
    const std::vector<std::string> schemas = {
        kIntegerA,
        R"({"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer"},
            "tags":{"type":"array","items":{"type":"string"},"maxItems":3},"kind":{"enum":["a","b",1,null]}},
            "required":["name","kind"],"additionalProperties":false})",
        R"({"type":"object","properties":{"x":{"anyOf":[{"type":"number"},{"type":"null"}]},"y":{"type":"boolean"},
            "z":{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2}},"required":["x","y","z"],
            "additionalProperties":false})",
        // Extra keys allowed. No required property: a walk that has chosen
        // extra keys could only reach one by luck, the shallowest-state rule
        // would not steer it there.
        R"({"type":"object","properties":{"id":{"type":"integer"},"ok":{"type":"boolean"}}})",
    };
    const std::vector<std::string> bytes = TokenMasker::bytes_of(tok());
    std::mt19937 rng(20261201);
    for (const std::string& text : schemas) {
        auto g = Grammar::from_schema(text);
        const json schema = json::parse(text);
        for (int walk = 0; walk < 6; ++walk) {
            const std::string reply = random_reply(*g, masker(), eos(), bytes, rng, 24);
            const json value = json::parse(reply, nullptr, false);
            ASSERT_FALSE(value.is_discarded()) << reply;
            EXPECT_TRUE(valid(value, schema)) << reply;
        }
    }
    auto any = Grammar::any_json_object();
    for (int walk = 0; walk < 6; ++walk) {
        const std::string reply = random_reply(*any, masker(), eos(), bytes, rng, 24);
        const json value = json::parse(reply, nullptr, false);
        ASSERT_FALSE(value.is_discarded()) << reply;
        EXPECT_TRUE(value.is_object()) << reply;
    }
}

}  // namespace
}  // namespace tf::grammar
