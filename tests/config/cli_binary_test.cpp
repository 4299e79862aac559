// The real tensorfold binary, run as a user would from a shell.
#include <gtest/gtest.h>

#include "gpu/device.h"

#include "tests/support/run_command.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <sys/wait.h>

namespace {

using tf::test_support::run_tensorfold;
using RunResult = tf::test_support::CommandResult;

TEST(Binary, VersionExitsZero) {
    RunResult r = run_tensorfold("--version");
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.output.rfind("tensorfold ", 0), 0u) << r.output;
}

TEST(Binary, ServeHelpShowsEveryFlag) {
    RunResult r = run_tensorfold("serve --help");
    EXPECT_EQ(r.exit_code, 0);
    for (const char* flag : {"--host", "--port", "--api-key", "--served-model-name", "--ctx-size", "--max-streams",
                             "--threads", "--quantize", "--kv-type", "--device", "--log-level", "--recall", "--recall-dir", "--recall-gib",
                             "--recall-read-only"}) {
        EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
    }
}

TEST(Binary, BadRecallGibExitsWithItsMessage) {
    RunResult r = run_tensorfold("serve --recall-gib 0");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("--recall-gib"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("must be more than 0 GiB"), std::string::npos) << r.output;
}

TEST(Binary, ServeDeviceCudaWithoutAGpuFailsSayingWhy) {
    // serve is real (tests/e2e); what it cannot do it refuses with a reason,
    // before it loads any weights. With a GPU present, tests/e2e/gpu_server_test.cpp covers it.
    if (tf::gpu::built_with_cuda() && !tf::gpu::list_devices().empty()) GTEST_SKIP() << "this machine has a CUDA device";
    RunResult r = run_tensorfold("serve --device cuda --port 0");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("--device cuda: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("use --device cpu or auto"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("weights loaded"), std::string::npos) << r.output;
}

TEST(Binary, QuantizeIsRefusedForTheCudaBackendBeforeLoading) {
    RunResult r = run_tensorfold("serve --quantize q4_k --device cuda --port 0");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("--quantize q4_k: the CUDA backend holds bf16 weights"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("weights loaded"), std::string::npos) << r.output;
}

TEST(Binary, A16BitOrFp32KvCacheIsRefusedForTheCudaBackendBeforeLoading) {
    RunResult r = run_tensorfold("serve --kv-type f16 --device cuda --port 0");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("--kv-type f16: the CUDA backend's KV cache is bf16"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("weights loaded"), std::string::npos) << r.output;
}

TEST(Binary, ServeOfADirectoryWithoutAModelFailsNamingTheFile) {
    // A directory of its own: /tmp itself may well hold a model file.
    std::string dir = (std::filesystem::temp_directory_path() / "tf-no-model-XXXXXX").string();
    ASSERT_NE(::mkdtemp(dir.data()), nullptr);
    RunResult r = run_tensorfold("serve " + dir + " --port 0");
    std::filesystem::remove(dir);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find(dir), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("listening on"), std::string::npos) << r.output;
}

}  // namespace
