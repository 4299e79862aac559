// `tensorfold serve` on a random NemotronH checkpoint (Mamba2, attention and
// MLP layers; tinycode's tokenizer) through the real binary: the same tokens
// with Recall off, on (copies that land and copies that miss, so rounds are
// rolled back on the recurrent state) and read-only, at concurrency 1 and
// 4; and --device cuda refused, naming the architecture, before any weight
// loads.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "model/checkpoint_writer.h"
#include "recall_report.h"
#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;

constexpr int kSeeds = 8;

// Written once per test binary run, in its own temporary directory.
const std::string& nemotron_h_dir() {
    static TempDir dir;
    static const std::string path = [] {
        model::CheckpointSpec spec = model::preset_spec("tiny-nemotron-h");
        spec.vocab_size = 8192;  // tinycode's tokenizer
        spec.eos_token_ids = {0};
        spec.seed = 31;
        const std::string out = dir / "tiny-nemotron-h";
        model::write_checkpoint(spec, out, tinycode_dir());
        return out;
    }();
    return path;
}

std::string request(int seed) {
    return json{{"model", "tiny-nemotron-h"},
                {"prompt", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"},
                {"max_tokens", 40},
                {"temperature", 0.8},
                {"seed", seed}}
        .dump();
}

std::string reply_text(const Response& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? json::parse(r.body)["choices"][0]["text"].get<std::string>() : "";
}

// Seeds [first, first + count) at once, one connection each.
std::vector<std::string> concurrently(const ServerProcess& server, int first, int count) {
    std::vector<std::string> texts(static_cast<size_t>(count));
    std::vector<std::thread> clients;
    for (int i = 0; i < count; ++i) {
        clients.emplace_back([&, i] { texts[i] = reply_text(server.post("/v1/completions", request(first + i))); });
    }
    for (std::thread& client : clients) client.join();
    return texts;
}

TEST(NemotronHServer, RepliesAreTheSameTokensWithRecallOffOnAndReadOnlyAtConcurrencyOneAndFour) {
    TempDir dir;
    std::vector<std::string> off(kSeeds);
    {
        ServerProcess server({}, nemotron_h_dir());
        ASSERT_TRUE(server.listening()) << server.output();
        EXPECT_NE(server.output().find("NemotronHForCausalLM"), std::string::npos) << server.output();
        for (int seed = 0; seed < kSeeds; ++seed) off[seed] = reply_text(server.post("/v1/completions", request(seed)));
    }
    for (int seed = 0; seed < kSeeds; ++seed) EXPECT_FALSE(off[seed].empty()) << seed;
    {
        ServerProcess server({"--recall-dir", dir / "record"}, nemotron_h_dir());
        ASSERT_TRUE(server.listening()) << server.output();
        // Concurrency 1: seed 0, then seed 0 again (its reply is copied whole).
        EXPECT_EQ(reply_text(server.post("/v1/completions", request(0))), off[0]);
        wait_for_adds(server, 1);
        EXPECT_EQ(reply_text(server.post("/v1/completions", request(0))), off[0]);
        const json once = wait_for_adds(server, 2);
        EXPECT_GT(once["tokens_landed"].get<uint64_t>(), 0u) << once.dump();
        // Concurrency 4: seeds 0..3 (0 is a regenerate), then 4..7, whose
        // prompt the record continues with other seeds' replies: those
        // copies are offered and miss, and their rounds roll back.
        const std::vector<std::string> first = concurrently(server, 0, 4);
        const std::vector<std::string> second = concurrently(server, 4, 4);
        for (int i = 0; i < 4; ++i) {
            EXPECT_EQ(first[i], off[i]) << "seed " << i;
            EXPECT_EQ(second[i], off[4 + i]) << "seed " << 4 + i;
        }
        const json report = wait_for_adds(server, 10);
        EXPECT_GT(report["tokens_drafted"].get<uint64_t>(), report["tokens_landed"].get<uint64_t>()) << report.dump();
    }
    {
        ServerProcess server({"--recall-dir", dir / "record", "--recall-read-only"}, nemotron_h_dir());
        ASSERT_TRUE(server.listening()) << server.output();
        EXPECT_EQ(reply_text(server.post("/v1/completions", request(5))), off[5]);
        const std::vector<std::string> all = concurrently(server, 0, 4);
        for (int i = 0; i < 4; ++i) EXPECT_EQ(all[i], off[i]) << "seed " << i;
    }
}

TEST(NemotronHServer, DeviceCudaIsRefusedNamingTheArchitectureBeforeWeightsLoad) {
    ServerProcess server({"--device", "cuda"}, nemotron_h_dir());
    EXPECT_FALSE(server.listening());
    EXPECT_NE(server.wait(), 0);
    EXPECT_NE(server.output().find("is a NemotronHForCausalLM model"), std::string::npos) << server.output();
    EXPECT_NE(server.output().find("--device cpu"), std::string::npos) << server.output();
}

}  // namespace
}  // namespace tf::e2e
