// `tensorfold tokenize` against the real binary (TF_BINARY, set by ctest).
#include <gtest/gtest.h>

#include "tests/support/run_command.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <unistd.h>

#include "tests/tokenizer/tokenizer_test_support.h"

namespace tf::tokenizer {
namespace {

struct CommandRun {
    int exit_code = -1;
    std::string out;
};

// Runs `tensorfold tokenize ARGS` with `input` on stdin.
CommandRun tokenize(const std::string& args, const std::string& input, const std::string& subcommand = "tokenize") {
    // ctest runs the tests of this file in parallel processes: one stdin file each.
    const std::string in_path = ::testing::TempDir() + "tokenize_stdin_" +
                                ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                                std::to_string(getpid()) + ".txt";
    std::ofstream(in_path, std::ios::binary) << input;
    const test_support::CommandResult result = test_support::run_command(
        test_support::tensorfold_binary() + " " + subcommand + " " + args + " < " + in_path + " 2>&1");
    std::remove(in_path.c_str());
    CommandRun run;
    run.out = result.output;
    run.exit_code = result.exit_code;
    return run;
}

TEST(TokenizeCommand, PrintsTheIdsOfStdinAsAJsonArray) {
    const CommandRun run = tokenize("", "Hello, world!");
    EXPECT_EQ(run.exit_code, 0) << run.out;
    EXPECT_EQ(run.out, "[6983,308,11,324,3768,0]\n");  // /work/shared/oracle: tokenize "Hello, world!"
}

TEST(TokenizeCommand, DecodePrintsTheTextOfAJsonArrayOfIds) {
    const CommandRun run = tokenize("--decode", "[6983, 308, 11, 324, 3768, 0]");
    EXPECT_EQ(run.exit_code, 0) << run.out;
    EXPECT_EQ(run.out, "Hello, world!");
}

TEST(TokenizeCommand, ChatRendersMessagesWithTheGenerationPromptThenEncodes) {
    const CommandRun run = tokenize("--chat", R"([{"role": "system", "content": "You write Python."}, {"role": "user", "content": "Sort a list."}])");
    EXPECT_EQ(run.exit_code, 0) << run.out;
    // The shared oracle's "chat" record.
    EXPECT_EQ(run.out, "[8190,82,2693,198,7338,3439,2340,13,8191,198,8190,3129,198,50,372,275,732,13,8191,198,8190,445,545,676,198]\n");
}

TEST(TokenizeCommand, TakesAModelDirectory) {
    const CommandRun run = tokenize(testing::npm_model_dir("qwen3").string(), "Hello, world!");
    EXPECT_EQ(run.exit_code, 0) << run.out;
    const auto expected = testing::load_model("qwen3").encode("Hello, world!");
    EXPECT_EQ(run.out, nlohmann::json(expected).dump() + "\n");
}

TEST(TokenizeCommand, AnUnknownIdIsAnErrorNamingIt) {
    const CommandRun run = tokenize("--decode", "[1, 999999]");
    EXPECT_EQ(run.exit_code, 1);
    EXPECT_NE(run.out.find("token id 999999 is not in the vocabulary"), std::string::npos) << run.out;
}

// `tensorfold generate --prompt TEXT`: the tokenizer encodes the prompt and
// the reply comes back as text; checked against the shared greedy oracle.
nlohmann::ordered_json first_greedy_case() {
    for (const auto& r : testing::read_jsonl(testing::fixtures_dir() / "tinycode_hf_public.jsonl")) {
        if (r["kind"] == "greedy") return r;
    }
    throw std::runtime_error("no greedy case in tinycode_hf_public.jsonl");
}

std::string shell_quote(const std::string& text) {
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

TEST(GenerateWithPrompt, EncodesThePromptTextToTheOraclePromptIds) {
    const auto c = first_greedy_case();
    const auto greedy = c["greedy_ids"].get<std::vector<TokenId>>();
    const CommandRun run = tokenize("--prompt " + shell_quote(c["prompt"].get<std::string>()) + " --max-tokens 6 --json", "",
                                    "generate");
    ASSERT_EQ(run.exit_code, 0) << run.out;
    const auto out = nlohmann::json::parse(run.out);
    const std::vector<TokenId> first(greedy.begin(), greedy.begin() + 6);
    EXPECT_EQ(out["ids"].get<std::vector<TokenId>>(), first);
    EXPECT_EQ(out["text"].get<std::string>(), Tokenizer::load(testing::tinycode_dir()).decode(first, true));
}

TEST(GenerateWithPrompt, PrintsTheReplyAsText) {
    const auto c = first_greedy_case();
    const auto greedy = c["greedy_ids"].get<std::vector<TokenId>>();
    const CommandRun run = tokenize("--prompt " + shell_quote(c["prompt"].get<std::string>()) + " --max-tokens 6", "", "generate");
    ASSERT_EQ(run.exit_code, 0) << run.out;
    const std::vector<TokenId> first(greedy.begin(), greedy.begin() + 6);
    EXPECT_EQ(run.out, Tokenizer::load(testing::tinycode_dir()).decode(first, true) + "\n");
}

TEST(GenerateWithPrompt, RefusesBothPromptForms) {
    const CommandRun run = tokenize("--prompt hi --prompt-ids 1,2", "", "generate");
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_NE(run.out.find("not both"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace tf::tokenizer
