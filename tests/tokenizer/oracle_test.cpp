// The oracle: ids, decodings and chat renderings that transformers.js
// (@lenml/tokenizers, @huggingface/jinja) and Hugging Face produced for the
// same files (tests/tokenizer/fixtures/make_fixtures.mjs,
// /work/shared/oracle). Every case must match exactly.
#include <gtest/gtest.h>

#include "tests/tokenizer/tokenizer_test_support.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {
namespace {

using testing::fixtures_dir;
using testing::model_dir;
using testing::read_jsonl;

std::string show(const std::string& text) { return nlohmann::json(text).dump(); }

// Checks every encode case of fixtures_dir()/encode_<name>.jsonl; returns the count.
size_t check_encode_fixture(const std::string& name, const Tokenizer& tok, size_t at_least = 2000) {
    const auto records = read_jsonl(fixtures_dir() / ("encode_" + name + ".jsonl"));
    EXPECT_GE(records.size(), at_least) << "fixture encode_" << name << ".jsonl is missing or short";
    size_t failures = 0;
    for (const auto& r : records) {
        const std::string text = r["text"].get<std::string>();
        const auto expected = r["ids"].get<std::vector<TokenId>>();
        const bool add_special = r.value("add_special_tokens", false);
        const std::vector<TokenId> ids = tok.encode(text, true, add_special);
        if (ids != expected && ++failures <= 5) {
            ADD_FAILURE() << name << ": encode(" << show(text) << ")\n  got      " << nlohmann::json(ids).dump()
                          << "\n  expected " << nlohmann::json(expected).dump();
        }
        if (add_special) continue;
        const std::string decoded = r.contains("decoded") ? r["decoded"].get<std::string>() : text;
        const std::string got = tok.decode(expected);
        if (got != decoded && ++failures <= 5) {
            ADD_FAILURE() << name << ": decode of " << show(text) << "\n  got      " << show(got) << "\n  expected "
                          << show(decoded);
        }
    }
    EXPECT_EQ(failures, 0u) << name << ": " << failures << " of " << records.size() << " cases differ";
    return records.size();
}

size_t check_encode_fixture(const std::string& name) { return check_encode_fixture(name, testing::load_model(name)); }

TEST(TokenizerOracle, TinycodeEncodesAndDecodesLikeTransformersJs) { check_encode_fixture("tinycode"); }
TEST(TokenizerOracle, Qwen3EncodesAndDecodesLikeTransformersJs) { check_encode_fixture("qwen3"); }
TEST(TokenizerOracle, Llama3EncodesAndDecodesLikeTransformersJs) { check_encode_fixture("llama3"); }
TEST(TokenizerOracle, Llama2EncodesAndDecodesLikeTransformersJs) { check_encode_fixture("llama2"); }

// Llama 2 spelled with a Metaspace pre-tokenizer and decoder (the rewrite of
// make_fixtures.mjs's llama2_metaspace()).
TEST(TokenizerOracle, MetaspaceLlama2EncodesAndDecodesLikeTransformersJs) {
    testing::load_model("llama2");  // says how to install it when missing
    auto json = nlohmann::ordered_json::parse(testing::read_text(testing::npm_model_dir("llama2") / "tokenizer.json"));
    const nlohmann::ordered_json metaspace = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"add_prefix_space", true}, {"prepend_scheme", "first"}, {"split", false}};
    json["normalizer"] = nullptr;
    json["pre_tokenizer"] = metaspace;
    json["decoder"] = {{"type", "Sequence"},
                       {"decoders", nlohmann::ordered_json::array({metaspace, {{"type", "ByteFallback"}}, {{"type", "Fuse"}}})}};
    check_encode_fixture("llama2_metaspace", Tokenizer::from_json(json.dump()), 400);
}

void check_chat_fixture(const std::string& name) {
    const auto records = read_jsonl(fixtures_dir() / ("chat_" + name + ".jsonl"));
    ASSERT_FALSE(records.empty()) << "fixture chat_" << name << ".jsonl is missing";
    const Tokenizer tok = testing::load_model(name);
    for (const auto& r : records) {
        const std::string expected = r["rendered"].get<std::string>();
        const std::string rendered = tok.render_chat(testing::chat_request(r));
        EXPECT_EQ(rendered, expected) << name << " " << r["case"] << " add_generation_prompt="
                                      << r["add_generation_prompt"] << " (rendered by " << r["renderer"] << ")";
        EXPECT_EQ(tok.encode(rendered), r["ids"].get<std::vector<TokenId>>()) << name << " " << r["case"];
    }
}

TEST(TokenizerOracle, TinycodeChatMlTemplateRendersLikeTransformersJs) { check_chat_fixture("tinycode"); }
TEST(TokenizerOracle, Llama3ChatTemplateRendersLikeTransformersJs) { check_chat_fixture("llama3"); }
TEST(TokenizerOracle, Qwen3ChatTemplateWithToolsRendersLikeHuggingFaceJinja) { check_chat_fixture("qwen3"); }

// /work/shared/oracle/tinycode_hf_public.jsonl, produced with Hugging Face's
// tokenizers and transformers.
TEST(TokenizerOracle, TinycodeMatchesTheSharedHuggingFaceOracle) {
    const auto records = read_jsonl(fixtures_dir() / "tinycode_hf_public.jsonl");
    ASSERT_FALSE(records.empty());
    const Tokenizer tok = Tokenizer::load(testing::tinycode_dir());
    size_t checked = 0;
    for (const auto& r : records) {
        const std::string kind = r["kind"].get<std::string>();
        if (kind == "tokenize") {
            const auto ids = r["ids"].get<std::vector<TokenId>>();
            EXPECT_EQ(tok.encode(r["text"].get<std::string>()), ids) << r["text"];
            EXPECT_EQ(tok.decode(ids), r["decoded"].get<std::string>());
        } else if (kind == "chat") {
            const std::string rendered = tok.render_chat(testing::chat_request(r));
            EXPECT_EQ(tok.encode(rendered), r["ids"].get<std::vector<TokenId>>());
        } else if (kind == "greedy") {
            EXPECT_EQ(tok.encode(r["prompt"].get<std::string>()), r["prompt_ids"].get<std::vector<TokenId>>());
        } else {
            continue;
        }
        ++checked;
    }
    EXPECT_EQ(checked, records.size());
}

}  // namespace
}  // namespace tf::tokenizer
