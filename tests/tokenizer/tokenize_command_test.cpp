// `tensorfold tokenize` against the real binary (TF_BINARY, set by ctest).
#include <gtest/gtest.h>

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
CommandRun tokenize(const std::string& args, const std::string& input) {
    const char* binary = std::getenv("TF_BINARY");
    if (binary == nullptr) throw std::runtime_error("TF_BINARY is not set (run through ctest)");
    // ctest runs the tests of this file in parallel processes: one stdin file each.
    const std::string in_path = ::testing::TempDir() + "tokenize_stdin_" +
                                ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                                std::to_string(getpid()) + ".txt";
    std::ofstream(in_path, std::ios::binary) << input;
    const std::string command = std::string(binary) + " tokenize " + args + " < " + in_path + " 2>&1";
    CommandRun run;
    FILE* pipe = popen(command.c_str(), "r");
    char buf[4096];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) run.out.append(buf, n);
    const int status = pclose(pipe);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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

}  // namespace
}  // namespace tf::tokenizer
