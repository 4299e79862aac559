// The identity digest: same content, same digest; any change to what a
// tokenizer.json and a GGUF both carry, a new one. The v1 (legacy) digest
// also covers the added tokens' flags.
#include <gtest/gtest.h>

#include "tests/tokenizer/tokenizer_test_support.h"
#include "tokenizer/identity.h"

namespace tf::tokenizer {
namespace {

using ordered = nlohmann::ordered_json;

ordered tinycode_json() { return ordered::parse(testing::read_text(testing::tinycode_dir() / "tokenizer.json")); }

TokenizerIdentity identity_of(const ordered& j, int indent = -1) {
    return tokenizer_identity(Tokenizer::from_json(j.dump(indent)));
}

TEST(TokenizerIdentity, IsASha256HexDigestWithTheVocabularySize) {
    const Tokenizer tok = Tokenizer::load(testing::tinycode_dir());
    const TokenizerIdentity id = tokenizer_identity(tok);
    EXPECT_EQ(id.digest_hex.size(), 64u);
    EXPECT_EQ(id.digest_hex.find_first_not_of("0123456789abcdef"), std::string::npos);
    EXPECT_EQ(id.vocab_size, 8192u);
    EXPECT_EQ(tok.vocab_size(), 8192u);
}

TEST(TokenizerIdentity, DoesNotDependOnJsonKeyOrderWhitespaceOrMergeSpelling) {
    const ordered original = tinycode_json();
    const TokenizerIdentity reference = identity_of(original, 2);
    EXPECT_EQ(identity_of(original, -1).digest_hex, reference.digest_hex) << "whitespace";

    ordered reordered;  // top-level keys and vocabulary entries in reverse order
    std::vector<std::string> keys;
    for (auto it = original.begin(); it != original.end(); ++it) keys.push_back(it.key());
    for (auto k = keys.rbegin(); k != keys.rend(); ++k) reordered[*k] = original[*k];
    ordered vocab = ordered::object();
    std::vector<std::pair<std::string, ordered>> entries;
    for (auto it = original["model"]["vocab"].begin(); it != original["model"]["vocab"].end(); ++it) {
        entries.emplace_back(it.key(), it.value());
    }
    for (auto e = entries.rbegin(); e != entries.rend(); ++e) vocab[e->first] = e->second;
    reordered["model"]["vocab"] = vocab;
    EXPECT_EQ(identity_of(reordered).digest_hex, reference.digest_hex) << "key order";

    ordered spelled = original;  // merges as "a b" strings instead of ["a", "b"]
    for (auto& m : spelled["model"]["merges"]) m = m[0].get<std::string>() + " " + m[1].get<std::string>();
    EXPECT_EQ(identity_of(spelled).digest_hex, reference.digest_hex) << "merge spelling";
}

TEST(TokenizerIdentity, ChangesWithAnyTokenMergeOrAddedToken) {
    const ordered original = tinycode_json();
    const std::string reference = identity_of(original).digest_hex;

    ordered renamed = original;  // two vocabulary tokens trade ids
    renamed["model"]["vocab"]["ct"] = original["model"]["vocab"]["mp"];
    renamed["model"]["vocab"]["mp"] = original["model"]["vocab"]["ct"];
    ordered dropped_merge = original;
    dropped_merge["model"]["merges"].erase(dropped_merge["model"]["merges"].size() - 1);
    ordered swapped_merges = original;
    std::swap(swapped_merges["model"]["merges"][10], swapped_merges["model"]["merges"][11]);
    ordered added_content = original;
    added_content["added_tokens"][0]["content"] = "<|endoftext2|>";
    ordered added_id = original;
    added_id["added_tokens"][2]["id"] = 8300;

    for (const auto& [what, j] : std::vector<std::pair<std::string, ordered>>{{"token", renamed},
                                                                              {"merge removed", dropped_merge},
                                                                              {"merge order", swapped_merges},
                                                                              {"added token content", added_content},
                                                                              {"added token id", added_id}}) {
        EXPECT_NE(identity_of(j).digest_hex, reference) << what;
    }
    EXPECT_EQ(identity_of(added_id).vocab_size, 8301u);
}

// A GGUF carries no lstrip/rstrip/normalized/single_word flags, so v2 does
// not cover them; v1, which earlier releases wrote into records, does.
TEST(TokenizerIdentity, AnAddedTokensFlagsChangeOnlyTheLegacyDigest) {
    const ordered original = tinycode_json();
    ordered flagged = original;
    flagged["added_tokens"][1]["lstrip"] = true;
    const Tokenizer a = Tokenizer::from_json(original.dump()), b = Tokenizer::from_json(flagged.dump());
    EXPECT_EQ(a.identity().digest_hex, b.identity().digest_hex);
    ASSERT_TRUE(a.legacy_identity() && b.legacy_identity());
    EXPECT_NE(a.legacy_identity()->digest_hex, b.legacy_identity()->digest_hex);
    ordered special = original;  // which ids are added tokens is covered
    special["added_tokens"].erase(2);
    special["model"]["vocab"]["<|im_end|>"] = 8191;
    EXPECT_NE(Tokenizer::from_json(special.dump()).identity().digest_hex, a.identity().digest_hex);
}

TEST(TokenizerIdentity, DiffersBetweenDifferentTokenizers) {
    EXPECT_NE(Tokenizer::load(testing::tinycode_dir()).identity().digest_hex,
              testing::load_model("qwen3").identity().digest_hex);
    EXPECT_EQ(testing::load_model("qwen3").vocab_size(), 151669u);
}

}  // namespace
}  // namespace tf::tokenizer
