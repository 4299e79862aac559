// Streaming detokenization: only complete UTF-8 leaves, and the pieces
// concatenate to decode() of all ids.
#include <gtest/gtest.h>

#include "tests/tokenizer/tokenizer_test_support.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/utf8.h"

namespace tf::tokenizer {
namespace {

std::string stream(const Tokenizer& tok, const std::vector<TokenId>& ids, std::vector<std::string>* chunks = nullptr,
                   bool skip_special = false) {
    Detokenizer d(tok, skip_special);
    std::string all;
    for (TokenId id : ids) {
        std::string chunk = d.push(id);
        if (chunks) chunks->push_back(chunk);
        all += chunk;
    }
    std::string rest = d.finish();
    if (chunks) chunks->push_back(rest);
    return all + rest;
}

TEST(Detokenizer, HoldsBackACharacterSplitAcrossTokensUntilItIsComplete) {
    const Tokenizer tok = Tokenizer::load(testing::tinycode_dir());
    // tinycode has no token for "界": byte-level BPE spells it with byte tokens.
    const std::vector<TokenId> ids = tok.encode("界");
    ASSERT_GT(ids.size(), 1u) << "the test needs a character split over tokens";
    Detokenizer d(tok);
    for (size_t k = 0; k + 1 < ids.size(); ++k) EXPECT_EQ(d.push(ids[k]), "") << "byte " << k << " left too early";
    EXPECT_EQ(d.push(ids.back()), "界");
    EXPECT_EQ(d.finish(), "");
}

TEST(Detokenizer, EveryChunkIsValidUtf8AndTheChunksJoinToDecode) {
    for (const std::string name : {"tinycode", "llama2", "llama3", "qwen3"}) {
        const Tokenizer tok = testing::load_model(name);
        const auto records = testing::read_jsonl(testing::fixtures_dir() / ("encode_" + name + ".jsonl"));
        ASSERT_FALSE(records.empty());
        for (size_t k = 0; k < records.size(); k += 3) {
            if (records[k].value("add_special_tokens", false)) continue;
            const auto ids = records[k]["ids"].get<std::vector<TokenId>>();
            std::vector<std::string> chunks;
            const std::string joined = stream(tok, ids, &chunks);
            for (const std::string& c : chunks) {
                ASSERT_EQ(utf8::first_invalid(c), std::string::npos) << name << ": a chunk carries broken UTF-8";
            }
            ASSERT_EQ(joined, tok.decode(ids)) << name << ": " << records[k]["text"];
        }
    }
}

TEST(Detokenizer, BytesThatCanNeverFormACharacterLeaveAsReplacementCharacters) {
    const Tokenizer tok = Tokenizer::load(testing::tinycode_dir());
    const std::vector<TokenId> e4 = tok.encode("界");  // starts with the lead byte 0xE7
    std::vector<TokenId> broken{e4[0]};
    for (TokenId id : tok.encode("ab")) broken.push_back(id);
    EXPECT_EQ(stream(tok, broken), "\xEF\xBF\xBD" "ab");
    EXPECT_EQ(tok.decode(broken), "\xEF\xBF\xBD" "ab");
}

TEST(Detokenizer, FinishFlushesAnIncompleteCharacterAsAReplacementCharacter) {
    const Tokenizer tok = Tokenizer::load(testing::tinycode_dir());
    const std::vector<TokenId> ids = tok.encode("界");
    Detokenizer d(tok);
    EXPECT_EQ(d.push(ids[0]), "");
    EXPECT_EQ(d.finish(), "\xEF\xBF\xBD");
}

// A model whose vocab_size is padded past its tokenizer's (Qwen's 151936
// rows for 151669 tokens; a test checkpoint's 131072 for tinycode's 8192)
// may sample a row with no piece: it adds no text and the reply goes on.
TEST(Detokenizer, AnIdPastTheVocabularyAddsNoTextAndTheReplyGoesOn) {
    const Tokenizer tok = Tokenizer::load(testing::tinycode_dir());
    const std::vector<TokenId> ids = tok.encode("def f");
    ASSERT_EQ(ids.size(), 2u);
    EXPECT_FALSE(tok.has_piece(tok.vocab_size()));
    EXPECT_TRUE(tok.has_piece(ids[0]));
    Detokenizer d(tok);
    std::string text = d.push(ids[0]);
    text += d.push(tok.vocab_size() + 100);
    text += d.push(ids[1]);
    text += d.finish();
    EXPECT_EQ(text, "def f");
    EXPECT_THROW(tok.decode(std::vector<TokenId>{tok.vocab_size() + 100}), TokenizerError);
}

TEST(Detokenizer, SkipsSpecialTokensWhenAsked) {
    const Tokenizer tok = Tokenizer::load(testing::tinycode_dir());
    const std::vector<TokenId> ids = tok.encode("<|im_start|>hi<|im_end|>");
    EXPECT_EQ(stream(tok, ids, nullptr, /*skip_special=*/true), "hi");
    EXPECT_EQ(stream(tok, ids, nullptr, /*skip_special=*/false), "<|im_start|>hi<|im_end|>");
}

TEST(Detokenizer, Llama2StripsTheLeadingSpaceOnlyAtTheStartOfText) {
    const Tokenizer tok = testing::load_model("llama2");
    const std::vector<TokenId> ids = tok.encode("Hello world");
    EXPECT_EQ(stream(tok, ids), "Hello world");
    Detokenizer continuation(tok, true, /*continuation=*/true);
    std::string text;
    for (TokenId id : ids) text += continuation.push(id);
    EXPECT_EQ(text + continuation.finish(), " Hello world");
}

TEST(Detokenizer, Llama3CleanUpSpacesMatchesDecodeEvenWhenAPatternSpansTokens) {
    const Tokenizer tok = testing::load_model("llama3");  // clean_up_tokenization_spaces: true
    for (const std::string text : {"a . b", "it ' s", "do n't stop", "x ,y ?z !", "we 're here , ok", "end .", "a b c d "}) {
        const std::vector<TokenId> ids = tok.encode(text);
        EXPECT_EQ(stream(tok, ids), tok.decode(ids)) << text;
    }
    // Text with no pattern in reach is not held back.
    Detokenizer d(tok);
    std::string shown;
    for (TokenId id : tok.encode("one two three")) shown += d.push(id);
    EXPECT_EQ(shown, "one two three");
}

}  // namespace
}  // namespace tf::tokenizer
