// Greedy continuations of the two Nemotron families and the mixtures of
// experts against the PyTorch reference (tools/reference_forward.py
// --greedy, token by token for the Mamba2 recurrence):
// tests/fixtures/nemotron_oracle.jsonl and moe_oracle.jsonl hold, per case,
// make-checkpoint's arguments, a prompt, 24 greedy ids and the reference's
// top-2 logit gap at each step. With f32 activations our logits sit within
// about 1e-6 of the reference's, so every step whose gap is above 1e-4 must
// pick the same id; the first closer step (a near-tie) ends the comparison.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

#include "cpu/cpu_backend.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/test_support.h"

namespace tf::cpu {
namespace {

constexpr double kNearTie = 1e-4;

// The lines of `file` whose arch is `arch` (empty: all).
std::vector<nlohmann::json> oracle_cases(const char* file, const std::string& arch = "") {
    std::ifstream in(testing::fixture_path(file));
    std::vector<nlohmann::json> cases;
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        nlohmann::json c = nlohmann::json::parse(line);
        if (arch.empty() || c.at("arch") == arch) cases.push_back(std::move(c));
    }
    return cases;
}

int32_t argmax(const std::vector<float>& logits, size_t row, int32_t vocab) {
    const float* r = logits.data() + row * vocab;
    return static_cast<int32_t>(std::max_element(r, r + vocab) - r);
}

// Greedy ids of every case, each step compared until its first near-tie;
// returns how many steps were compared.
int compare_greedy(const std::vector<nlohmann::json>& cases) {
    int compared = 0;
    for (const nlohmann::json& c : cases) {
        testing::TempDir dir;
        std::string command = TF_MAKE_CHECKPOINT;
        for (const auto& arg : c.at("make_checkpoint_args")) command += " " + arg.get<std::string>();
        command += " --out " + dir.str() + " > /dev/null";
        EXPECT_EQ(std::system(command.c_str()), 0) << command;
        auto backend =
            load_cpu_backend(dir.str(), 2, testing::fastest_isa(kernels::Activations::f32), kernels::Activations::f32);
        EXPECT_EQ(backend->config().architecture, c.at("arch").get<std::string>());
        const int32_t vocab = backend->config().vocab_size;
        const auto prompt = c.at("prompt").get<std::vector<int32_t>>();
        const auto expected = c.at("greedy").get<std::vector<int32_t>>();
        const auto gaps = c.at("gaps").get<std::vector<double>>();
        backend->open_stream(0, static_cast<int32_t>(prompt.size() + expected.size()) + 1);
        std::vector<model::Row> rows;
        for (size_t i = 0; i < prompt.size(); ++i)
            rows.push_back({0, static_cast<int32_t>(i), prompt[i], i + 1 == prompt.size()});
        std::vector<float> logits;
        backend->forward(rows, logits);
        auto position = static_cast<int32_t>(prompt.size());
        for (size_t step = 0; step < expected.size(); ++step) {
            if (gaps[step] < kNearTie) break;
            const int32_t id = argmax(logits, 0, vocab);
            EXPECT_EQ(id, expected[step]) << c.at("arch") << " " << c.at("make_checkpoint_args") << ", prompt of "
                                          << prompt.size() << ", step " << step;
            if (id != expected[step]) break;
            ++compared;
            const model::Row next{0, position++, id, true};
            backend->forward({&next, 1}, logits);
        }
    }
    return compared;
}

TEST(NemotronOracle, GreedyIdsOfBothFamiliesEqualTheReferenceUpToNearTies) {
    const std::vector<nlohmann::json> cases = oracle_cases("nemotron_oracle.jsonl");
    ASSERT_EQ(cases.size(), 8u) << "tests/fixtures/nemotron_oracle.jsonl";
    EXPECT_GT(compare_greedy(cases), 8 * 20);
}

// Per-expert and fused (transformers 5) checkpoints, bf16 and f32.
TEST(MoeOracle, Qwen3MoeGreedyIdsEqualTheReferenceUpToNearTies) {
    const std::vector<nlohmann::json> cases = oracle_cases("moe_oracle.jsonl", "Qwen3MoeForCausalLM");
    ASSERT_EQ(cases.size(), 6u) << "tests/fixtures/moe_oracle.jsonl";
    EXPECT_GT(compare_greedy(cases), 6 * 15);
}

// E layers among Mamba2 and attention ones: a sigmoid router choosing in
// groups, a shared expert, with and without a latent width.
TEST(MoeOracle, NemotronHMoeGreedyIdsEqualTheReferenceUpToNearTies) {
    const std::vector<nlohmann::json> cases = oracle_cases("moe_oracle.jsonl", "NemotronHForCausalLM");
    ASSERT_EQ(cases.size(), 3u) << "tests/fixtures/moe_oracle.jsonl";
    EXPECT_GT(compare_greedy(cases), 3 * 15);
}

}  // namespace
}  // namespace tf::cpu
