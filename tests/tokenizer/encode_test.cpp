// Encoding and loading behaviours that the oracle files do not pin down.
#include <gtest/gtest.h>

#include "tests/tokenizer/tokenizer_test_support.h"

namespace tf::tokenizer {
namespace {

using ordered = nlohmann::ordered_json;

// A tiny byte-level tokenizer: every byte, and the merges "a b" -> "ab", "ab c" -> "abc".
ordered tiny_byte_level() {
    ordered vocab = ordered::object();
    for (int b = 0; b < 256; ++b) vocab[testing::byte_level_char(b)] = b;
    vocab["ab"] = 256;
    vocab["abc"] = 257;
    return {{"version", "1.0"},
            {"added_tokens", ordered::array({{{"id", 258}, {"content", "<eos>"}, {"special", true}, {"normalized", false}},
                                             {{"id", 259}, {"content", "[L]"}, {"special", false}, {"lstrip", true},
                                              {"rstrip", true}, {"normalized", false}}})},
            {"normalizer", nullptr},
            {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
            {"decoder", {{"type", "ByteLevel"}}},
            {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", ordered::array({"a b", ordered::array({"ab", "c"})})}}}};
}

TEST(TokenizerEncode, MergesInBothSpellingsApplyInRankOrder) {
    const Tokenizer tok = Tokenizer::from_json(tiny_byte_level().dump());
    EXPECT_EQ(tok.encode("abc"), (std::vector<TokenId>{257}));
    EXPECT_EQ(tok.encode("abd"), (std::vector<TokenId>{256, 'd'}));
    EXPECT_EQ(tok.decode(tok.encode("abc abd")), "abc abd");
}

TEST(TokenizerEncode, SpecialTokensAreTextWhenNotAllowed) {
    const Tokenizer tok = Tokenizer::load(testing::tinycode_dir());
    const std::vector<TokenId> allowed = tok.encode("<|im_start|>user", true);
    EXPECT_EQ(allowed.front(), 8190u);
    const std::vector<TokenId> plain = tok.encode("<|im_start|>user", false);
    for (TokenId id : plain) EXPECT_FALSE(tok.is_special(id)) << id;
    EXPECT_EQ(tok.decode(plain), "<|im_start|>user");
}

TEST(TokenizerEncode, AddedTokensSwallowWhitespaceOnTheSidesTheyStrip) {
    const Tokenizer tok = Tokenizer::from_json(tiny_byte_level().dump());
    EXPECT_EQ(tok.encode("a  [L]  c"), (std::vector<TokenId>{'a', 259, 'c'}));
    EXPECT_EQ(tok.encode("a<eos> c"), (std::vector<TokenId>{'a', 258, testing::byte_level_id(' '), 'c'}));
}

TEST(TokenizerEncode, NonSpecialAddedTokensMatchEvenWhenSpecialOnesAreNotAllowed) {
    const Tokenizer tok = Tokenizer::from_json(tiny_byte_level().dump());
    const std::vector<TokenId> ids = tok.encode("x[L]<eos>", false);
    EXPECT_EQ(ids[1], 259u);
    EXPECT_EQ(tok.decode(ids), "x[L]<eos>");
}

TEST(TokenizerEncode, Llama2AddsItsBosOnlyWhenAskedForSpecialTokens) {
    const Tokenizer tok = testing::load_model("llama2");
    EXPECT_NE(tok.encode("Hello").front(), 1u);
    EXPECT_EQ(tok.encode("Hello", true, true).front(), 1u);
    EXPECT_EQ(tok.special_ids().bos, std::optional<TokenId>(1));
    EXPECT_EQ(tok.special_ids().eos, std::optional<TokenId>(2));
}

TEST(TokenizerEncode, Llama2FallsBackToBytesForCharactersOutsideItsVocabulary) {
    const Tokenizer tok = testing::load_model("llama2");
    const std::vector<TokenId> ids = tok.encode("𝄞");  // U+1D11E, four bytes, not in the vocabulary
    ASSERT_EQ(ids.size(), 5u);  // "▁" then <0xF0> <0x9D> <0x84> <0x9E>
    EXPECT_EQ(tok.token_to_piece(ids[1]), "\xF0");
    EXPECT_EQ(tok.decode(ids), "𝄞");
}

TEST(TokenizerEncode, LongWhitespaceRunsAndLongWordsEncodeAndRoundTrip) {
    const Tokenizer tok = testing::load_model("qwen3");
    const std::string spaces(100000, ' ');
    const std::string word(50000, 'x');
    EXPECT_EQ(tok.decode(tok.encode(spaces + "a")), spaces + "a");
    EXPECT_EQ(tok.decode(tok.encode(word)), word);
    const Tokenizer llama2 = testing::load_model("llama2");
    EXPECT_EQ(llama2.decode(llama2.encode(word + " " + spaces)), word + " " + spaces);
}

TEST(TokenizerEncode, RejectsTextThatIsNotUtf8WithTheOffset) {
    const Tokenizer tok = Tokenizer::load(testing::tinycode_dir());
    try {
        tok.encode("ok\xC3(");
        FAIL() << "no error";
    } catch (const TokenizerError& e) {
        EXPECT_NE(std::string(e.what()).find("byte 2"), std::string::npos) << e.what();
    }
}

TEST(TokenizerEncode, TokenLookupsWorkInBothDirections) {
    const Tokenizer tok = Tokenizer::load(testing::tinycode_dir());
    EXPECT_EQ(tok.token_to_id("<|im_end|>"), std::optional<TokenId>(8191));
    EXPECT_EQ(tok.token_to_id("Ġthe"), tok.encode(" the").front());
    EXPECT_EQ(tok.token_to_piece(tok.encode(" the").front()), " the");
    EXPECT_THROW(tok.token_to_piece(9000), TokenizerError);
    EXPECT_THROW(tok.decode(std::vector<TokenId>{5, 123456}), TokenizerError);
}

// ---- load errors ---------------------------------------------------------------

std::string load_error(const std::string& json) {
    try {
        Tokenizer::from_json(json, {}, "models/x/tokenizer.json");
    } catch (const TokenizerError& e) {
        return e.what();
    }
    return "(loaded)";
}

TEST(TokenizerLoad, NamesAnUnsupportedModelType) {
    ordered j = tiny_byte_level();
    j["model"]["type"] = "WordPiece";
    EXPECT_EQ(load_error(j.dump()), "models/x/tokenizer.json: model.type 'WordPiece' is not supported (supported: BPE)");
}

TEST(TokenizerLoad, NamesAnUnsupportedPreTokenizer) {
    ordered j = tiny_byte_level();
    j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", ordered::array({{{"type", "BertPreTokenizer"}}})}};
    EXPECT_NE(load_error(j.dump()).find("pre_tokenizer.pretokenizers[0].type 'BertPreTokenizer' is not supported"),
              std::string::npos)
        << load_error(j.dump());
}

TEST(TokenizerLoad, ExplainsTruncatedJsonMissingModelAndBadMerges) {
    const std::string full = tiny_byte_level().dump();
    EXPECT_NE(load_error(full.substr(0, full.size() / 2)).find("not valid JSON"), std::string::npos);
    ordered no_model = tiny_byte_level();
    no_model.erase("model");
    EXPECT_EQ(load_error(no_model.dump()), "models/x/tokenizer.json: model is missing");
    ordered bad_merge = tiny_byte_level();
    bad_merge["model"]["merges"][0] = "ab";
    EXPECT_EQ(load_error(bad_merge.dump()), "models/x/tokenizer.json: model.merges[0] 'ab' is not two tokens separated by one space");
    ordered unknown_merge = tiny_byte_level();
    unknown_merge["model"]["merges"][1] = "zz q";
    EXPECT_EQ(load_error(unknown_merge.dump()),
              "models/x/tokenizer.json: model: merges[1]: its first token is not in the vocabulary");
    ordered bad_id = tiny_byte_level();
    bad_id["model"]["vocab"]["ab"] = -3;
    EXPECT_NE(load_error(bad_id.dump()).find("model.vocab[\"ab\"] id -3 is outside"), std::string::npos);
}

TEST(TokenizerLoad, NamesTheMissingFileOfAModelDirectory) {
    try {
        Tokenizer::load(testing::source_dir() / "docs");
        FAIL() << "no error";
    } catch (const TokenizerError& e) {
        EXPECT_NE(std::string(e.what()).find("docs/tokenizer.json: not found"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace tf::tokenizer
