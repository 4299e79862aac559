// Deterministic fuzzing of the loader and the encoder: thousands of mutated
// tokenizer.json files and random byte strings. Every outcome must be a
// Tokenizer or a TokenizerError: no crash, no other exception, no hang.
// (fuzz/tokenizer_fuzzer.cpp runs the same harness under libFuzzer.)
#include <gtest/gtest.h>

#include <random>

#include "tests/tokenizer/fuzz/fuzz_one.h"
#include "tests/tokenizer/tokenizer_test_support.h"

namespace tf::tokenizer {
namespace {

using ordered = nlohmann::ordered_json;

std::string small_tokenizer_json() {
    ordered vocab = ordered::object();
    for (int b = 0; b < 256; ++b) vocab[testing::byte_level_char(b)] = b;
    vocab["ab"] = 256;
    vocab["abc"] = 257;
    vocab["<0x41>"] = 258;
    ordered j = {
        {"added_tokens", ordered::array({{{"id", 259}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
                                         {{"id", 260}, {"content", "[x]"}, {"lstrip", true}, {"rstrip", true},
                                          {"single_word", true}, {"normalized", true}}})},
        {"normalizer", {{"type", "Sequence"}, {"normalizers", ordered::array({{{"type", "NFC"}},
                                                                              {{"type", "Replace"}, {"pattern", {{"String", "q"}}}, {"content", "Q"}}})}}},
        {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", ordered::array({
            {{"type", "Split"}, {"pattern", {{"Regex", R"((?i:'s|'t)|\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"}}}, {"behavior", "Isolated"}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}}},
        {"post_processor", {{"type", "TemplateProcessing"}, {"single", ordered::array({{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}})}}},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model", {{"type", "BPE"}, {"byte_fallback", true}, {"vocab", vocab}, {"merges", ordered::array({"a b", ordered::array({"ab", "c"})})}}}};
    return j.dump(1);
}

// A random JSON value to put where a field was.
ordered random_value(std::mt19937_64& rng) {
    switch (rng() % 10) {
        case 0: return nullptr;
        case 1: return -1;
        case 2: return 4294967296LL;
        case 3: return 1e300;
        case 4: return "";
        case 5: return ordered::array();
        case 6: return ordered::object();
        case 7: return "Ġ";
        case 8: return ordered::array({"a", 1, nullptr});
        default: return true;
    }
}

// Replaces, removes or duplicates a random node of the document.
void mutate_structure(ordered& doc, std::mt19937_64& rng) {
    ordered* node = &doc;
    for (int depth = 0; depth < 6; ++depth) {
        if ((!node->is_object() && !node->is_array()) || node->empty() || rng() % 4 == 0) break;
        auto it = node->begin();
        std::advance(it, static_cast<long>(rng() % node->size()));
        ordered* child = &*it;
        if ((!child->is_object() && !child->is_array()) || rng() % 3 == 0) {
            const int action = static_cast<int>(rng() % 3);
            if (action == 0) {
                *child = random_value(rng);
            } else if (action == 1 && node->is_object()) {
                node->erase(it.key());
            } else if (node->is_array()) {
                node->push_back(*child);
            } else {
                *child = random_value(rng);
            }
            return;
        }
        node = child;
    }
    *node = random_value(rng);
}

void mutate_bytes(std::string& text, std::mt19937_64& rng) {
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !text.empty(); ++e) {
        const size_t at = rng() % text.size();
        switch (rng() % 4) {
            case 0: text[at] = static_cast<char>(rng()); break;
            case 1: text.erase(at, 1 + rng() % 16); break;
            case 2: text.insert(at, 1, "{}[]\",:0 \\"[rng() % 11]); break;
            default: text.resize(at); break;  // truncated
        }
    }
}

TEST(TokenizerFuzz, MutatedTokenizerFilesLoadOrFailCleanly) {
    std::mt19937_64 rng(20240517);
    const std::string base = small_tokenizer_json();
    const ordered base_doc = ordered::parse(base);
    size_t loaded = 0, rejected = 0;
    for (int round = 0; round < 3000; ++round) {
        std::string text;
        if (round % 2 == 0) {
            ordered doc = base_doc;
            for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k) mutate_structure(doc, rng);
            text = doc.dump();
        } else {
            text = base;
            mutate_bytes(text, rng);
        }
        const fuzz::Outcome outcome = fuzz::load_and_exercise(text, rng());
        ASSERT_TRUE(outcome.ok) << "round " << round << ": " << outcome.unexpected;
        (outcome.loaded ? loaded : rejected)++;
    }
    // Both branches must be exercised for the test to mean anything.
    EXPECT_GT(loaded, 100u);
    EXPECT_GT(rejected, 300u);
}

TEST(TokenizerFuzz, MutatedTinycodeFilesLoadOrFailCleanly) {
    std::mt19937_64 rng(7);
    const ordered base_doc = ordered::parse(testing::read_text(testing::tinycode_dir() / "tokenizer.json"));
    for (int round = 0; round < 150; ++round) {
        ordered doc = base_doc;
        mutate_structure(doc, rng);
        const fuzz::Outcome outcome = fuzz::load_and_exercise(doc.dump(), rng());
        ASSERT_TRUE(outcome.ok) << "round " << round << ": " << outcome.unexpected;
    }
}

TEST(TokenizerFuzz, RandomBytesEncodeOrAreRejectedAsNotUtf8) {
    std::mt19937_64 rng(99);
    for (const std::string name : {"tinycode", "llama2"}) {
        const Tokenizer tok = testing::load_model(name);
        for (int round = 0; round < 3000; ++round) {
            std::string bytes(rng() % 64, '\0');
            for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? rng() : "ab <|>\n\xC3\xA9\xE2\x96\x81"[rng() % 12]);
            const fuzz::Outcome outcome = fuzz::exercise(tok, bytes, rng());
            ASSERT_TRUE(outcome.ok) << name << " round " << round << ": " << outcome.unexpected;
        }
    }
}

}  // namespace
}  // namespace tf::tokenizer
