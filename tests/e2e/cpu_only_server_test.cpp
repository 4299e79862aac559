// `tensorfold serve` on the random checkpoints of the architectures only
// the CPU backend runs (tinycode's tokenizer), through the real binary:
// NemotronH (Mamba2, attention and MLP layers), Qwen3-MoE (experts) and
// NemotronH with expert layers. The
// same tokens with Recall off, on (copies that land and copies that miss, so
// rounds are rolled back: on the recurrent state, or after rows that routed
// to other experts) and read-only, at concurrency 1 and 4; and --device
// cuda refused, naming the architecture, before any weight loads.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <filesystem>
#include <thread>

#include "model/checkpoint_writer.h"
#include "recall_report.h"
#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;

struct Model {
    const char* preset;
    const char* architecture;
};
void PrintTo(const Model& m, std::ostream* os) { *os << m.preset; }

// Written once per test binary run, in its own temporary directory.
std::string model_dir(const Model& m) {
    static TempDir dir;
    const std::string out = dir / m.preset;
    if (!std::filesystem::exists(out)) {
        model::CheckpointSpec spec = model::preset_spec(m.preset);
        spec.vocab_size = 8192;  // tinycode's tokenizer
        spec.eos_token_ids = {0};
        spec.seed = 31;
        model::write_checkpoint(spec, out, tinycode_dir());
    }
    return out;
}

// Token ids in and out: a random model's replies are rarely the tokens
// their text would encode to. temperature 0: greedy.
std::string request(const std::vector<int32_t>& prompt, int max_tokens, double temperature, int seed = 0) {
    return json{{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", temperature},
                {"seed", seed},     {"return_token_ids", true}}
        .dump();
}

std::vector<int32_t> reply_ids(const Response& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return {};
    return json::parse(r.body)["choices"][0]["token_ids"].get<std::vector<int32_t>>();
}

std::vector<int32_t> joined(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// A request the test sends: its body, and the reply the server without
// Recall gave it.
struct Case {
    std::string body;
    std::vector<int32_t> off;
};

// Cases [first, first + count) at once, one connection each; their replies.
std::vector<std::vector<int32_t>> concurrently(const ServerProcess& server, const std::vector<Case>& cases,
                                               size_t first, size_t count) {
    std::vector<std::vector<int32_t>> replies(count);
    std::vector<std::thread> clients;
    for (size_t i = 0; i < count; ++i) {
        clients.emplace_back([&, i] { replies[i] = reply_ids(server.post("/v1/completions", cases[first + i].body)); });
    }
    for (std::thread& client : clients) client.join();
    return replies;
}

// Copies that land: a sampled request sent again (its reply is in the
// record). Copies that miss: the record's only continuation of the greedy
// reply's first 20 ids is a prompt that went another way (the detour), so
// greedy requests that reach that point are offered it and reject it, and
// their rounds roll the Mamba2 state back.
class CpuOnlyServer : public ::testing::TestWithParam<Model> {};

TEST_P(CpuOnlyServer, RepliesAreTheSameTokensWithRecallOffOnAndReadOnlyAtConcurrencyOneAndFour) {
    const std::string model = model_dir(GetParam());
    TempDir dir;
    std::vector<Case> cases;
    enum : size_t { kDetour = 0, kReachDetour = 1, kSampled = 5, kCases = 9 };
    {
        ServerProcess server({}, model);
        ASSERT_TRUE(server.listening()) << server.output();
        EXPECT_NE(server.output().find(GetParam().architecture), std::string::npos) << server.output();
        const Response first = server.post(
            "/v1/completions", json{{"prompt", "def fibonacci(n):\n    \"\"\"Return the n-th number.\"\"\"\n"},
                                    {"max_tokens", 1},
                                    {"return_token_ids", true}}
                                   .dump());
        ASSERT_EQ(first.status, 200) << first.body;
        const auto prompt = json::parse(first.body)["choices"][0]["prompt_token_ids"].get<std::vector<int32_t>>();
        const std::vector<int32_t> greedy = reply_ids(server.post("/v1/completions", request(prompt, 40, 0.0)));
        ASSERT_EQ(greedy.size(), 40u);
        const std::vector<int32_t> head(greedy.begin(), greedy.begin() + 20);
        const std::vector<int32_t> detour(greedy.rbegin(), greedy.rbegin() + 20);
        ASSERT_NE(detour.front(), greedy[20]);
        cases.push_back({request(joined(joined(prompt, head), detour), 4, 0.0), {}});
        for (int cut = 19; cut >= 16; --cut) {
            cases.push_back(
                {request(joined(prompt, std::vector<int32_t>(greedy.begin(), greedy.begin() + cut)), 24, 0.0), {}});
        }
        for (int seed = 0; seed < 4; ++seed) cases.push_back({request(prompt, 40, 1.5, seed), {}});
        ASSERT_EQ(cases.size(), static_cast<size_t>(kCases));
        for (Case& c : cases) c.off = reply_ids(server.post("/v1/completions", c.body));
    }
    {
        ServerProcess server({"--recall-dir", dir / "record"}, model);
        ASSERT_TRUE(server.listening()) << server.output();
        // Concurrency 1: a sampled reply twice (copied whole the second time).
        EXPECT_EQ(reply_ids(server.post("/v1/completions", cases[kSampled].body)), cases[kSampled].off);
        wait_for_adds(server, 1);
        EXPECT_EQ(reply_ids(server.post("/v1/completions", cases[kSampled].body)), cases[kSampled].off);
        const json landed = wait_for_adds(server, 2);
        EXPECT_GT(landed["tokens_landed"].get<uint64_t>(), 0u) << landed.dump();
        EXPECT_EQ(reply_ids(server.post("/v1/completions", cases[kDetour].body)), cases[kDetour].off);
        wait_for_adds(server, 3);
        // First, alone, the request whose prompt holds 19 of the 20 ids: its
        // first copy starts at the detour, and no other request has yet
        // added the greedy continuation, so that copy misses whatever the
        // cost curve and the landing rates. (Sent together with the others,
        // the first to finish adds the greedy continuation, the most recent
        // match, and on a busy host a slower one copied that and missed
        // nothing.)
        EXPECT_EQ(reply_ids(server.post("/v1/completions", cases[kReachDetour].body)), cases[kReachDetour].off);
        const json missed = wait_for_adds(server, 4);
        EXPECT_GT(missed["tokens_drafted"].get<uint64_t>(), missed["tokens_landed"].get<uint64_t>()) << missed.dump();
        // Concurrency 4: the requests that reach the detour, then the sampled ones.
        const auto reaching = concurrently(server, cases, kReachDetour, 4);
        const auto sampled = concurrently(server, cases, kSampled, 4);
        for (size_t i = 0; i < 4; ++i) {
            EXPECT_EQ(reaching[i], cases[kReachDetour + i].off) << "case " << kReachDetour + i;
            EXPECT_EQ(sampled[i], cases[kSampled + i].off) << "case " << kSampled + i;
        }
        wait_for_adds(server, 12);
    }
    {
        ServerProcess server({"--recall-dir", dir / "record", "--recall-read-only"}, model);
        ASSERT_TRUE(server.listening()) << server.output();
        EXPECT_EQ(reply_ids(server.post("/v1/completions", cases[kReachDetour].body)), cases[kReachDetour].off);
        const auto all = concurrently(server, cases, kSampled, 4);
        for (size_t i = 0; i < 4; ++i) EXPECT_EQ(all[i], cases[kSampled + i].off) << "case " << kSampled + i;
    }
}

TEST_P(CpuOnlyServer, DeviceCudaIsRefusedNamingTheArchitectureBeforeWeightsLoad) {
    ServerProcess server({"--device", "cuda"}, model_dir(GetParam()));
    EXPECT_FALSE(server.listening());
    EXPECT_NE(server.wait(), 0);
    EXPECT_NE(server.output().find(std::string("is a ") + GetParam().architecture + " model"), std::string::npos)
        << server.output();
    EXPECT_NE(server.output().find("--device cpu"), std::string::npos) << server.output();
}

INSTANTIATE_TEST_SUITE_P(Models, CpuOnlyServer,
                         ::testing::Values(Model{"tiny-nemotron-h", "NemotronHForCausalLM"},
                                           Model{"tiny-qwen3-moe", "Qwen3MoeForCausalLM"},
                                           Model{"tiny-nemotron-h-moe", "NemotronHForCausalLM"}),
                         [](const auto& info) {
                             std::string name = info.param.preset;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

}  // namespace
}  // namespace tf::e2e
