// `tensorfold generate`: its command line, and the real binary decoding the
// embedded tinycode model (greedy ids equal the Hugging Face oracle's).
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/wait.h>

#include "config/command_line.h"
#include "tests/support/run_command.h"

namespace tf::config {
namespace {

ParseOutcome parse(std::vector<std::string> args) { return parse_command_line(args, "/nonexistent/bin/tensorfold"); }

std::string tinycode() { return std::string(TF_SOURCE_DIR_FOR_TESTS) + "/models/tinycode"; }

TEST(GenerateCommandLine, ParsesEveryFlag) {
    ParseOutcome o = parse({"generate", tinycode(), "--prompt-ids", "1,2,30", "--max-tokens", "5", "--temperature",
                            "0.7", "--top-p", "0.9", "--seed", "42", "--threads", "2", "--json", "--ignore-eos"});
    ASSERT_TRUE(o.run) << o.message;
    EXPECT_EQ(o.command.subcommand, Subcommand::generate);
    const GenerateOptions& g = o.command.generate;
    EXPECT_EQ(g.prompt_ids, (std::vector<int32_t>{1, 2, 30}));
    EXPECT_EQ(g.max_tokens, 5);
    EXPECT_DOUBLE_EQ(g.temperature, 0.7);
    EXPECT_DOUBLE_EQ(g.top_p, 0.9);
    EXPECT_EQ(g.seed, 42u);
    EXPECT_EQ(g.threads, 2);
    EXPECT_TRUE(g.json);
    EXPECT_TRUE(g.ignore_eos);
    EXPECT_FALSE(g.timings);
    EXPECT_NE(g.model_dir.find("tinycode"), std::string::npos);
    EXPECT_TRUE(parse({"generate", tinycode(), "--prompt-ids", "1", "--timings"}).command.generate.timings);
}

TEST(GenerateCommandLine, DefaultsAreGreedySixteenTokensAndPlainOutput) {
    ParseOutcome o = parse({"generate", tinycode(), "--prompt-ids", "7"});
    ASSERT_TRUE(o.run) << o.message;
    EXPECT_EQ(o.command.generate.max_tokens, 16);
    EXPECT_EQ(o.command.generate.temperature, 0.0);
    EXPECT_EQ(o.command.generate.top_p, 1.0);
    EXPECT_FALSE(o.command.generate.json);
}

TEST(GenerateCommandLine, RefusesBadInput) {
    for (auto args : std::vector<std::vector<std::string>>{
             {"generate", tinycode()},                                            // no --prompt-ids
             {"generate", tinycode(), "--prompt-ids", "1,,2"},
             {"generate", tinycode(), "--prompt-ids", "a,b"},
             {"generate", tinycode(), "--prompt-ids", "-1"},
             {"generate", tinycode(), "--prompt-ids", "1", "--max-tokens", "0"},
             {"generate", tinycode(), "--prompt-ids", "1", "--top-p", "0"},
             {"generate", tinycode(), "--prompt-ids", "1", "--temperature", "-1"},
             {"generate", "/nonexistent/dir", "--prompt-ids", "1"}}) {
        ParseOutcome o = parse(args);
        EXPECT_FALSE(o.run) << args.back();
        EXPECT_EQ(o.exit_code, 2) << args.back();
    }
}

TEST(ParseTokenIds, AcceptsCommaSeparatedIdsOnly) {
    std::vector<int32_t> ids;
    EXPECT_EQ(parse_token_ids("0,8191,5", ids), "");
    EXPECT_EQ(ids, (std::vector<int32_t>{0, 8191, 5}));
    EXPECT_NE(parse_token_ids("", ids), "");
    EXPECT_NE(parse_token_ids("1,", ids), "");
    EXPECT_NE(parse_token_ids("1 2", ids), "");
    EXPECT_NE(parse_token_ids("99999999999", ids), "");
}

using test_support::run_tensorfold;
using RunResult = test_support::CommandResult;

// The first greedy case of the Hugging Face oracle.
nlohmann::json first_oracle_case() {
    std::ifstream in(std::string(TF_SOURCE_DIR_FOR_TESTS) + "/tests/fixtures/tinycode_hf_public.jsonl");
    std::string line;
    while (std::getline(in, line)) {
        auto j = nlohmann::json::parse(line);
        if (j.at("kind") == "greedy") return j;
    }
    ADD_FAILURE() << "no greedy case in the oracle";
    return {};
}

std::string join(const std::vector<int32_t>& ids) {
    std::string text;
    for (int32_t id : ids) text += (text.empty() ? "" : ",") + std::to_string(id);
    return text;
}

TEST(GenerateBinary, GreedyJsonOutputEqualsTheHfOracle) {
    const nlohmann::json c = first_oracle_case();
    const auto prompt = c.at("prompt_ids").get<std::vector<int32_t>>();
    const auto greedy = c.at("greedy_ids").get<std::vector<int32_t>>();
    RunResult r = run_tensorfold("generate " + tinycode() + " --prompt-ids " + join(prompt) + " --max-tokens " +
                                 std::to_string(greedy.size()) + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(nlohmann::json::parse(r.output).at("ids").get<std::vector<int32_t>>(), greedy);
}

TEST(GenerateBinary, PlainOutputIsCommaSeparatedIds) {
    const nlohmann::json c = first_oracle_case();
    const auto greedy = c.at("greedy_ids").get<std::vector<int32_t>>();
    RunResult r = run_tensorfold("generate --prompt-ids " + join(c.at("prompt_ids").get<std::vector<int32_t>>()) +
                                 " --max-tokens 4 --threads 1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output, join({greedy.begin(), greedy.begin() + 4}) + "\n");
}

TEST(GenerateBinary, SamplingIsReproducibleFromTheSeed) {
    const std::string args = "generate --prompt-ids 258,1084,54 --max-tokens 12 --temperature 0.9 --top-p 0.95 --json";
    RunResult a = run_tensorfold(args + " --seed 7 --threads 1"), b = run_tensorfold(args + " --seed 7 --threads 2");
    RunResult other = run_tensorfold(args + " --seed 8");
    ASSERT_EQ(a.exit_code, 0) << a.output;
    EXPECT_EQ(a.output, b.output);
    EXPECT_NE(a.output, other.output);
}

// `tensorfold ARGS` with stdout and stderr apart: the second run reads stderr
// alone (2>&1 >/dev/null sends stderr where stdout went, then drops stdout).
std::pair<RunResult, RunResult> run_apart(const std::string& args) {
    const std::string binary = test_support::tensorfold_binary() + " " + args;
    return {test_support::run_command(binary + " 2>/dev/null"), test_support::run_command(binary + " 2>&1 >/dev/null")};
}

TEST(GenerateBinary, TimingsGoToStderrAndLeaveStdoutAlone) {
    const std::string args = "generate --prompt-ids 258,1084,54,9,77 --max-tokens 6 --ignore-eos --threads 1";
    const auto [plain_out, plain_err] = run_apart(args);
    const auto [timed_out, timed_err] = run_apart(args + " --timings");
    ASSERT_EQ(plain_out.exit_code, 0) << plain_err.output;
    ASSERT_EQ(timed_out.exit_code, 0) << timed_err.output;
    EXPECT_EQ(timed_out.output, plain_out.output);
    EXPECT_EQ(plain_err.output.find("eval time"), std::string::npos) << plain_err.output;
    // Five prompt ids; six reply tokens, the first of them sampled by the
    // prompt's forward, so five decoded; eleven in all.
    const std::string& err = timed_err.output;
    const size_t load = err.find("       load time = ");
    const size_t prompt = err.find("prompt eval time = ");
    const size_t decode = err.find("       eval time = ");
    const size_t total = err.find("      total time = ");
    ASSERT_LT(load, prompt) << err;
    ASSERT_LT(prompt, decode) << err;
    ASSERT_LT(decode, total) << err;
    ASSERT_NE(total, std::string::npos) << err;
    EXPECT_LT(err.find(" ms /     5 tokens (", prompt), decode) << err;
    EXPECT_LT(err.find(" tokens per second)", prompt), decode) << err;
    EXPECT_LT(err.find(" ms /     5 tokens (", decode), total) << err;
    EXPECT_LT(err.find(" tokens per second)", decode), total) << err;
    EXPECT_NE(err.find(" ms /    11 tokens\n", total), std::string::npos) << err;
}

TEST(GenerateBinary, QuantizedWeightsDecodeAndAreNamedInTheTimings) {
    const auto [out, err] = run_apart("generate --prompt-ids 258,1084,54,9,77 --max-tokens 6 --ignore-eos --threads 1 "
                                      "--quantize q4_0 --timings");
    ASSERT_EQ(out.exit_code, 0) << err.output;
    EXPECT_EQ(std::count(out.output.begin(), out.output.end(), ','), 5) << out.output;
    EXPECT_NE(err.output.find("weights = q4_0 weights"), std::string::npos) << err.output;
    RunResult bad = run_tensorfold("generate --prompt-ids 1,2 --quantize int8");
    EXPECT_EQ(bad.exit_code, 2) << bad.output;
    EXPECT_NE(bad.output.find("--quantize"), std::string::npos) << bad.output;
}

TEST(GenerateBinary, EveryKvTypeDecodesAndAnUnknownOneIsRefused) {
    for (const char* type : {"f16", "bf16", "q8_0", "f32"}) {
        RunResult r = run_tensorfold(std::string("generate --prompt-ids 258,1084,54,9,77 --max-tokens 6 --ignore-eos "
                                                 "--threads 1 --kv-type ") + type);
        ASSERT_EQ(r.exit_code, 0) << type << ": " << r.output;
        EXPECT_EQ(std::count(r.output.begin(), r.output.end(), ','), 5) << r.output;
    }
    RunResult bad = run_tensorfold("generate --prompt-ids 1,2 --kv-type f8");
    EXPECT_EQ(bad.exit_code, 2) << bad.output;
    EXPECT_NE(bad.output.find("--kv-type"), std::string::npos) << bad.output;
}

TEST(GenerateBinary, OutOfVocabularyPromptIdIsRefused) {
    RunResult r = run_tensorfold("generate --prompt-ids 1,99999 --max-tokens 2");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("outside the vocabulary"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tf::config
