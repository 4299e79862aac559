// Starting and stopping `tensorfold serve`: the listening line, refusals
// before any weight is loaded, and a clean exit on SIGTERM.
#include <gtest/gtest.h>

#include <fstream>

#include "server_process.h"

namespace tf::e2e {
namespace {

namespace fs = std::filesystem;

TEST(Startup, PrintsTheBoundPortAndExitsZeroOnSigterm) {
    ServerProcess server({});
    ASSERT_TRUE(server.listening()) << server.output();
    EXPECT_NE(server.port(), 0);
    EXPECT_EQ(server.get("/health").status, 200);
    EXPECT_EQ(server.stop(), 0) << server.output();
    EXPECT_NE(server.output().find("SIGTERM received"), std::string::npos) << server.output();
}

TEST(Startup, AFlashNextModelRefusesRecallBeforeItLoads) {
    // Flash Next drafts from its own GPU-side history and cannot use the record,
    // so any Recall flag is rejected before weights are touched (docs/recall.md, "Flags").
    TempDir dir;
    const std::string model = dir / "flash-next";
    fs::create_directory(model);
    fs::copy_file(tinycode_dir() + "/tokenizer.json", model + "/tokenizer.json");
    fs::copy_file(tinycode_dir() + "/tokenizer_config.json", model + "/tokenizer_config.json");
    std::ofstream(model + "/config.json") << R"({"architectures": ["FlashNextForCausalLM"], "model_type": "flash_next"})";
    // No weights at all: a server that tried to load them would fail on the
    // missing safetensors instead.
    ServerProcess server({"--recall-dir", dir / "record"}, model);
    EXPECT_FALSE(server.listening());
    EXPECT_EQ(server.wait(), 1);
    const std::string out = server.output();
    EXPECT_NE(out.find("refuses --recall"), std::string::npos) << out;
    EXPECT_NE(out.find("reads no record"), std::string::npos) << out;
    EXPECT_EQ(out.find("safetensors"), std::string::npos) << out;
    EXPECT_FALSE(fs::exists(dir / "record")) << "no record is opened";
}

// --quantize: the startup line states the format and size of the weights,
// and the server answers with them; a name it does not know is refused
// before the tokenizer or any weight is read.
TEST(Startup, QuantizedWeightsAreStatedAndServe) {
    ServerProcess server({"--quantize", "q8_0"});
    ASSERT_TRUE(server.listening()) << server.output();
    EXPECT_NE(server.output().find("q8_0 weights"), std::string::npos) << server.output();
    EXPECT_NE(server.output().find("quantized from bf16 in"), std::string::npos) << server.output();
    const Response r = server.post("/v1/completions", R"({"prompt": "def add(a, b):", "max_tokens": 8, "seed": 1})");
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.body.find("\"completion_tokens\":8"), std::string::npos) << r.body;
    EXPECT_EQ(server.stop(), 0) << server.output();

    ServerProcess bad({"--quantize", "q3_k"});
    EXPECT_FALSE(bad.listening());
    EXPECT_EQ(bad.wait(), 2);
    EXPECT_NE(bad.output().find("--quantize"), std::string::npos) << bad.output();
    EXPECT_EQ(bad.output().find("weights"), std::string::npos) << bad.output();
}

TEST(Startup, APortInUseIsAnErrorNamingIt) {
    ServerProcess first({});
    ASSERT_TRUE(first.listening()) << first.output();
    const std::string port = std::to_string(first.port());
    ServerProcess second({}, tinycode_dir(), port);
    EXPECT_FALSE(second.listening());
    EXPECT_EQ(second.wait(), 1);
    EXPECT_NE(second.output().find("127.0.0.1:" + port), std::string::npos) << second.output();
}

TEST(Startup, ARecordOfAnotherTokenizerIsRefusedNamingIt) {
    // A record written by a different tokenizer stops start-up, and the error
    // identifies that tokenizer (docs/recall.md, "On disk").
    TempDir dir;
    const std::string record = dir / "record";
    fs::create_directory(record);
    fs::permissions(record, fs::perms::owner_all, fs::perm_options::replace);
    std::ofstream(record + "/identity") << "# tensorfold recall record: the tokenizer that wrote it\nformat 1\n"
                                           "tokenizer_sha256 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"
                                           "vocab_size 32000\nmodel other-model\n";
    fs::permissions(record + "/identity", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    ServerProcess server({"--recall-dir", record});
    EXPECT_FALSE(server.listening());
    EXPECT_EQ(server.wait(), 1);
    EXPECT_NE(server.output().find("00112233445566778899aabbccddeeff"), std::string::npos) << server.output();
}

}  // namespace
}  // namespace tf::e2e
