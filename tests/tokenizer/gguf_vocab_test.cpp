// Tokenizers from GGUF files (Tokenizer::from_gguf, through the server's own
// reading of the file, tools/model_files.h): tinycode's GGUF, as llama.cpp's
// converter wrote it, tokenizes every reference prompt to llama.cpp's ids
// and the Hugging Face files' ids, renders the same chat, and has the same
// identity; a SentencePiece vocabulary built here merges by score, falls
// back to bytes and adds BOS; bad keys are refused by name.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "tokenizer/tokenizer.h"
#include "tokenizer_test_support.h"
#include "tools/model_files.h"

namespace tf::tokenizer {
namespace {

namespace fs = std::filesystem;

std::string gguf_file(const std::string& name) {
    for (const fs::path& dir : {testing::source_dir() / "tests/fixtures/gguf", testing::source_dir() / "../shared/llamacpp/gguf"}) {
        if (fs::exists(dir / name)) return (dir / name).string();
    }
    return {};
}

TEST(GgufTokenizer, TinycodesGgufTokenizesAsLlamaCppAndTheHuggingFaceFiles) {
    const std::string path = gguf_file("tinycode-q4_0.gguf"), reference = gguf_file("reference.jsonl");
    if (path.empty() || reference.empty()) GTEST_SKIP() << "tinycode-q4_0.gguf is in neither the fixtures nor ../shared";
    const Tokenizer gguf = tools::load_model_tokenizer(path);
    const Tokenizer hf = Tokenizer::load(testing::tinycode_dir());
    int prompts = 0;
    for (const nlohmann::ordered_json& line : testing::read_jsonl(reference)) {
        const std::string prompt = line["prompt"];
        const std::vector<TokenId> ids = gguf.encode(prompt);
        std::vector<TokenId> llama_ids = line["prompt_ids"].get<std::vector<TokenId>>();
        // The nemotron_h fixture says add_bos_token and names no BOS:
        // llama.cpp then starts with its default (11), tensorfold with
        // nothing, as the directory's tokenizer does.
        if (line["file"] == "tiny-nemotron-h-bf16.gguf") {
            ASSERT_EQ(llama_ids.front(), 11);
            llama_ids.erase(llama_ids.begin());
        }
        EXPECT_EQ(ids, llama_ids) << line["file"] << " " << line["record_index"];
        EXPECT_EQ(ids, hf.encode(prompt));
        EXPECT_EQ(gguf.decode(ids), prompt);
        ++prompts;
    }
    EXPECT_EQ(prompts, 72);  // 6 prompts on each of 12 files, all with tinycode's tokenizer
    for (const char* special : {"<|im_start|>", "<|im_end|>", "<|endoftext|>"}) {
        EXPECT_EQ(gguf.encode(special), hf.encode(special)) << special;
        EXPECT_EQ(gguf.encode(special).size(), 1u) << special;
        EXPECT_TRUE(gguf.is_special(gguf.encode(special)[0])) << special;
    }
    EXPECT_EQ(gguf.special_ids().eos, hf.special_ids().eos);
    EXPECT_EQ(gguf.special_ids().pad, hf.special_ids().pad);
    // llama-quantize wrote a bos id (8189) the converter's file lacks; with
    // no add_bos_token key it is never added, as with the HF files.
    EXPECT_EQ(gguf.special_ids().bos, 8189);
    EXPECT_EQ(gguf.encode("def f():", true, true), hf.encode("def f():", true, true)) << "no BOS is added";
    ChatRequest chat;
    chat.messages = {ChatMessage{"system", "Be brief."}, ChatMessage{"user", "Write add(a, b)."}};
    chat.add_generation_prompt = true;
    EXPECT_EQ(gguf.render_chat(chat), hf.render_chat(chat));
}

// The digest a record is keyed by: a GGUF and the directory it came from
// share it (and with it one record); the v1 digest of the directory stays
// what earlier releases wrote into identity files.
TEST(GgufTokenizer, AGgufAndItsHuggingFaceOriginalHaveOneIdentity) {
    const std::string path = gguf_file("tinycode-q4_0.gguf");
    if (path.empty()) GTEST_SKIP() << "tinycode-q4_0.gguf is in neither the fixtures nor ../shared";
    const Tokenizer gguf = tools::load_model_tokenizer(path);
    const Tokenizer hf = Tokenizer::load(testing::tinycode_dir());
    EXPECT_EQ(gguf.identity().digest_hex, hf.identity().digest_hex);
    EXPECT_EQ(gguf.identity().vocab_size, 8192u);
    EXPECT_EQ(gguf.legacy_identity(), std::nullopt);
    ASSERT_TRUE(hf.legacy_identity());
    EXPECT_EQ(hf.legacy_identity()->digest_hex, "501ea15c00040c4f8fb7f9cd116b5a10af2930df24c4b3f15cab8e52bce5daba");
    EXPECT_NE(hf.identity().digest_hex, hf.legacy_identity()->digest_hex);
}

// A small SentencePiece (llama) vocabulary: <unk> <s> </s>, the 256 byte
// tokens, then pieces with scores.
GgufVocab spm_vocab() {
    GgufVocab v;
    v.source = "spm.gguf";
    v.model = "llama";
    v.tokens = {"<unk>", "<s>", "</s>"};
    v.token_types = {gguf_token_type::unknown, gguf_token_type::control, gguf_token_type::control};
    v.scores = {0, 0, 0};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        v.tokens.push_back(name);
        v.token_types.push_back(gguf_token_type::byte);
        v.scores.push_back(0);
    }
    const std::pair<const char*, float> pieces[] = {{"\u2581", -1}, {"a", -2}, {"b", -3}, {"c", -4},
                                                    {"\u2581a", -5}, {"ab", -6}, {"\u2581ab", -7}};
    for (const auto& [piece, score] : pieces) {
        v.tokens.push_back(piece);
        v.token_types.push_back(gguf_token_type::normal);
        v.scores.push_back(score);
    }
    v.unk = 0;
    v.bos = 1;
    v.eos = 2;
    return v;
}

constexpr TokenId kSpace = 259, kA = 260, kB = 261, kC = 262, kSpaceA = 263, kAb = 264, kSpaceAb = 265;

TEST(GgufTokenizer, ASentencePieceVocabularyMergesByScoreAndFallsBackToBytes) {
    const Tokenizer tok = Tokenizer::from_gguf(spm_vocab());
    // "▁ab▁ab": ▁a merges first (the best score), then ▁a + b.
    EXPECT_EQ(tok.encode("ab ab"), (std::vector<TokenId>{kSpaceAb, kSpaceAb}));
    EXPECT_EQ(tok.encode("ca"), (std::vector<TokenId>{kSpace, kC, kA}));
    EXPECT_EQ(tok.encode("a b"), (std::vector<TokenId>{kSpaceA, kSpace, kB}));
    // é is no piece: its two UTF-8 bytes, as byte tokens.
    EXPECT_EQ(tok.encode("é"), (std::vector<TokenId>{kSpace, 3 + 0xC3, 3 + 0xA9}));
    EXPECT_EQ(tok.encode("ab", true, true), (std::vector<TokenId>{1, kSpaceAb})) << "BOS by default for llama";
    for (const char* text : {"ab ab", "ca", "a b", "é", "b  c"}) EXPECT_EQ(tok.decode(tok.encode(text)), text) << text;
    EXPECT_EQ(tok.encode("</s>"), (std::vector<TokenId>{2}));
    EXPECT_TRUE(tok.is_special(2));
    EXPECT_EQ(tok.special_ids().bos, 1);

    GgufVocab no_prefix = spm_vocab();
    no_prefix.add_space_prefix = false;
    no_prefix.add_bos = false;
    const Tokenizer plain = Tokenizer::from_gguf(no_prefix);
    EXPECT_EQ(plain.encode("ab", true, true), (std::vector<TokenId>{kAb})) << "no leading \u2581, no BOS";
}

void expect_refused(const GgufVocab& v, const std::string& needle) {
    try {
        (void)Tokenizer::from_gguf(v);
        ADD_FAILURE() << "accepted; expected an error naming " << needle;
    } catch (const TokenizerError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find(v.source), std::string::npos) << message;
        EXPECT_NE(message.find(needle), std::string::npos) << message;
    }
}

TEST(GgufTokenizer, BadKeysAreRefusedByName) {
    GgufVocab v = spm_vocab();
    v.model = "bert";
    expect_refused(v, "tokenizer.ggml.model 'bert'");
    v = spm_vocab();
    v.model = "gpt2";
    v.merges = {"a b"};
    v.pre = "falcon";
    expect_refused(v, "tokenizer.ggml.pre 'falcon'");
    v.pre = "qwen2";
    v.merges.clear();
    expect_refused(v, "tokenizer.ggml.merges");
    v = spm_vocab();
    v.token_types.pop_back();
    expect_refused(v, "tokenizer.ggml.token_type");
    v = spm_vocab();
    v.eos = 100000;
    expect_refused(v, "tokenizer.ggml.eos_token_id 100000");
    v = spm_vocab();
    v.scores.clear();
    expect_refused(v, "tokenizer.ggml.scores");
}

}  // namespace
}  // namespace tf::tokenizer

namespace tf::tokenizer {
namespace {

// Llama 3's and Qwen3's real tokenizers, converted by llama.cpp and kept
// without their tensors (tests/fixtures/gguf/README.md), against the
// tokenizer.json files they came from (the npm fixtures).
class RealGgufTokenizer : public ::testing::TestWithParam<const char*> {};

TEST_P(RealGgufTokenizer, EncodesDecodesRendersAndIsIdentifiedAsItsTokenizerJson) {
    const std::string name = GetParam();
    const fs::path hf_dir = testing::model_dir(name);
    if (!fs::exists(hf_dir / "tokenizer.json")) GTEST_SKIP() << hf_dir << ": run scripts/install-deps";
    const Tokenizer gguf = tools::load_model_tokenizer(gguf_file(name + "-tokenizer.gguf"));
    const Tokenizer hf = Tokenizer::load(hf_dir);
    const std::vector<std::string> texts = {
        "def quicksort(items):\n    \"\"\"Sort a list.\"\"\"\n    return sorted(items)\n",
        "Hello, world! It's 2024: naïve café — 日本語のテキスト 12345 6789",
        "  leading spaces\n\n\ttabs\r\nCRLF   ",
        "emoji 🤖🎉 and <|eot_id|> <|im_end|> <|begin_of_text|> specials",
        "I'm sure they'll've done 1234567 things; DON'T",
        "ÀÉÎÕÜ ﬁ ﬂ Å e\u0301",
        "it 's a test , is n't it ? yes .",
    };
    for (const std::string& text : texts) {
        EXPECT_EQ(gguf.encode(text), hf.encode(text)) << name << ": " << text;
        EXPECT_EQ(gguf.encode(text, true, true), hf.encode(text, true, true)) << name << " with BOS: " << text;
        EXPECT_EQ(gguf.encode(text, false), hf.encode(text, false)) << name << " specials as text: " << text;
        EXPECT_EQ(gguf.decode(gguf.encode(text)), hf.decode(hf.encode(text))) << name;
    }
    EXPECT_EQ(gguf.identity().digest_hex, hf.identity().digest_hex) << name;
    EXPECT_EQ(gguf.identity().vocab_size, hf.identity().vocab_size) << name;
    EXPECT_EQ(gguf.special_ids().eos, hf.special_ids().eos) << name;
    ASSERT_EQ(gguf.has_chat_template(), hf.has_chat_template()) << name;
    if (hf.has_chat_template()) {
        ChatRequest chat;
        chat.messages = {ChatMessage{"system", "Be brief."}, ChatMessage{"user", "Write add(a, b)."}};
        EXPECT_EQ(gguf.render_chat(chat), hf.render_chat(chat)) << name;
    }
}

INSTANTIATE_TEST_SUITE_P(Families, RealGgufTokenizer, ::testing::Values("llama3", "qwen3"));

}  // namespace
}  // namespace tf::tokenizer
