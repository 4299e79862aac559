// The real server on the CUDA backend (ctest label gpu). Without a
// device the GPU tests skip and say why; the refusal of --device cuda runs
// everywhere: on a machine with no GPU it must come before any weight loads.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpu/device.h"
#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;

bool have_device(std::string* why) {
    if (!gpu::built_with_cuda()) {
        *why = "this build has no CUDA backend (nvcc was not found at configure time)";
        return false;
    }
    std::string why_none;
    if (gpu::list_devices(&why_none).empty()) {
        *why = "no CUDA device: " + why_none;
        return false;
    }
    return true;
}

#define SKIP_WITHOUT_DEVICE()                        \
    do {                                             \
        std::string why;                             \
        if (!have_device(&why)) GTEST_SKIP() << why; \
    } while (0)

std::string completion(const ServerProcess& server, double temperature, int max_tokens = 64) {
    const json body = {{"model", "tinycode"},
                       {"prompt", "def merge_sorted(left, right):\n    \"\"\"Merge two sorted lists.\"\"\"\n"},
                       {"max_tokens", max_tokens},
                       {"temperature", temperature},
                       {"seed", 1234}};
    const Response r = server.post("/v1/completions", body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? json::parse(r.body)["choices"][0]["text"].get<std::string>() : std::string();
}

uint64_t landed(const ServerProcess& server) {
    const Response r = server.get("/v1/recall");
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body)["tokens_landed"].get<uint64_t>();
}

TEST(GpuServer, DeviceCudaWithoutAGpuIsRefusedBeforeTheWeightsLoad) {
    std::string why;
    if (have_device(&why)) GTEST_SKIP() << "this machine has a CUDA device; the refusal cannot happen here";
    ServerProcess server({"--device", "cuda"});
    EXPECT_NE(server.wait(), 0);
    EXPECT_FALSE(server.listening());
    EXPECT_NE(server.output().find("--device cuda: "), std::string::npos) << server.output();
    EXPECT_EQ(server.output().find("weights loaded"), std::string::npos) << server.output();
}

TEST(GpuServer, AutoPicksTheGpuAndTheStartupLineSaysSo) {
    SKIP_WITHOUT_DEVICE();
    ServerProcess server({"--device", "auto"});
    ASSERT_TRUE(server.listening()) << server.output();
    EXPECT_NE(server.output().find("device cuda ("), std::string::npos) << server.output();
    EXPECT_NE(server.output().find("KV cache "), std::string::npos) << server.output();
}

// Copies are verified drafts on the GPU too: the same tokens with Recall
// off, on (a regenerated request lands its copy) and read-only, greedy and
// sampled.
TEST(GpuServer, RepliesAreTheSameTokensWithRecallOffOnAndReadOnly) {
    SKIP_WITHOUT_DEVICE();
    TempDir dir;
    for (const double temperature : {0.0, 0.8}) {
        SCOPED_TRACE("temperature " + std::to_string(temperature));
        std::string off_reply;
        {
            ServerProcess off({"--device", "cuda"});
            ASSERT_TRUE(off.listening()) << off.output();
            off_reply = completion(off, temperature);
            ASSERT_FALSE(off_reply.empty());
        }
        const std::string record = dir / ("record-" + std::to_string(temperature));
        {
            ServerProcess on({"--device", "cuda", "--recall-dir", record});
            ASSERT_TRUE(on.listening()) << on.output();
            EXPECT_EQ(completion(on, temperature), off_reply);
            // The writer adds a reply's ids after it went out: wait for them.
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            for (;;) {
                const json report = json::parse(on.get("/v1/recall").body);
                if (report["ids"].get<uint64_t>() >= 64 || std::chrono::steady_clock::now() > deadline) break;
            }
            EXPECT_EQ(completion(on, temperature), off_reply);
            EXPECT_GT(landed(on), 0u) << "the regenerated request should land its earlier reply";
        }
        {
            ServerProcess read_only({"--device", "cuda", "--recall-dir", record, "--recall-read-only"});
            ASSERT_TRUE(read_only.listening()) << read_only.output();
            EXPECT_EQ(completion(read_only, temperature), off_reply);
            EXPECT_GT(landed(read_only), 0u);
        }
    }
}

}  // namespace
}  // namespace tf::e2e
