// `cmake --install` into a temp prefix, then the installed binary alone
// (docs/deploy.md, "Installing"): its --version names the version and the
// commit, and with no MODEL it serves the model installed beside it under
// PREFIX/share/tensorfold/models, not the one in the source tree.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "child_process.h"
#include "server_process.h"

namespace tf::e2e {
namespace {

namespace fs = std::filesystem;
using test_support::run_command;

// Installs this build tree once for the whole binary; every test reads it.
class InstallE2e : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        prefix_ = new TempDir;
        const auto r = run_command(std::string(TF_CMAKE_COMMAND) + " --install " + TF_BUILD_DIR + " --prefix " +
                                   prefix_->path() + " 2>&1");
        install_output_ = new std::string(r.output);
        installed_ = r.exit_code == 0;
    }
    static void TearDownTestSuite() {
        delete prefix_;
        delete install_output_;
    }
    void SetUp() override { ASSERT_TRUE(installed_) << *install_output_; }

    static std::string prefix() { return prefix_->path(); }
    static std::string installed_binary() { return prefix() + "/bin/tensorfold"; }

private:
    static inline TempDir* prefix_ = nullptr;
    static inline std::string* install_output_ = nullptr;
    static inline bool installed_ = false;
};

TEST_F(InstallE2e, ThePrefixHoldsTheBinaryTheModelTheManualsAndTheRules) {
    for (const char* file : {"bin/tensorfold", "share/tensorfold/models/tinycode/config.json",
                             "share/tensorfold/models/tinycode/model.safetensors", "share/doc/tensorfold/README.md",
                             "share/doc/tensorfold/docs/recall.md", "share/doc/tensorfold/docs/deploy.md",
                             "share/doc/tensorfold/docs/monitoring.md",
                             "share/tensorfold/deploy/prometheus/tensorfold-rules.yml"}) {
        EXPECT_TRUE(fs::exists(prefix() + "/" + file)) << file;
    }
}

TEST_F(InstallE2e, VersionNamesTheVersionAndTheCommitItWasBuiltFrom) {
    const auto r = run_command(installed_binary() + " --version 2>&1");
    EXPECT_EQ(r.exit_code, 0);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(r.output, m, std::regex(R"(tensorfold \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown)\)\n)")))
        << r.output;
    // HEAD may have moved since the build; the commit must exist all the same.
    if (run_command("git -C " + source_dir() + " rev-parse --git-dir >/dev/null 2>&1").exit_code == 0) {
        ASSERT_NE(m[1], "unknown") << "built from a git checkout, yet no commit";
        EXPECT_EQ(run_command("git -C " + source_dir() + " cat-file -e " + m[1].str() + "^{commit} 2>&1").exit_code, 0)
            << m[1];
    }
}

TEST_F(InstallE2e, GenerateWithoutAModelUsesTheInstalledOne) {
    const auto r = run_command(installed_binary() + " generate --prompt 'def add(a, b):' --max-tokens 4 2>&1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(InstallE2e, ServeWithoutAModelServesTheInstalledOne) {
    ChildProcess serve({installed_binary(), "serve", "--port", "0", "--threads", "1"});
    const std::vector<std::string> listening = serve.wait_for_output(std::regex(R"(listening on http://127\.0\.0\.1:(\d+))"));
    ASSERT_FALSE(listening.empty()) << serve.output();
    const std::string model = fs::weakly_canonical(prefix() + "/share/tensorfold/models/tinycode").string();
    EXPECT_NE(serve.output().find("model tinycode (Qwen3ForCausalLM, " + model + ")"), std::string::npos)
        << serve.output();
    const Response r = http_request(static_cast<uint16_t>(std::stoi(listening[1])), "POST", "/v1/completions",
                                    R"({"model": "tinycode", "prompt": "def add(a, b):", "max_tokens": 4})");
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(serve.stop(), 0) << serve.output();
}

}  // namespace
}  // namespace tf::e2e
