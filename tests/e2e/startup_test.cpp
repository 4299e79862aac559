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

// --kv-type: the startup line and /metrics name the KV cache's type and its
// bytes a token (tinycode: 4 layers x 2 x 4 kv heads x 64 dims, 2 bytes in
// f16 and 4 in f32); replies are the same tokens whichever type the cache
// has where the model's near ties allow (tinycode's greedy reply here has
// none); an unknown type is refused before anything is read.
TEST(Startup, TheKvCacheTypeIsStatedOnTheStartupLineAndInMetrics) {
    ServerProcess f16({});
    ASSERT_TRUE(f16.listening()) << f16.output();
    EXPECT_NE(f16.output().find("KV cache f16, "), std::string::npos) << f16.output();
    const Response metrics = f16.get("/metrics");
    EXPECT_NE(metrics.body.find("tensorfold_kv_cache_info{type=\"f16\"} 1"), std::string::npos) << metrics.body;
    ServerProcess f32({"--kv-type", "f32"});
    ASSERT_TRUE(f32.listening()) << f32.output();
    EXPECT_NE(f32.output().find("KV cache f32, "), std::string::npos) << f32.output();
    // Twice the bytes a token.
    auto bytes_per_token = [](const std::string& body) {
        const std::string name = "\ntensorfold_kv_cache_bytes_per_token ";
        const size_t at = body.find(name);
        return at == std::string::npos ? -1.0 : std::stod(body.substr(at + name.size()));
    };
    const double f16_bytes = bytes_per_token(metrics.body), f32_bytes = bytes_per_token(f32.get("/metrics").body);
    EXPECT_GT(f16_bytes, 0);
    EXPECT_EQ(f32_bytes, 2 * f16_bytes);
    const std::string request = R"({"prompt": "def add(a, b):", "max_tokens": 24, "temperature": 0})";
    const Response a = f16.post("/v1/completions", request), b = f32.post("/v1/completions", request);
    ASSERT_EQ(a.status, 200) << a.body;
    ASSERT_EQ(b.status, 200) << b.body;
    auto text = [](const std::string& body) {
        const size_t begin = body.find("\"text\""), end = body.find("\"}]", begin);
        return begin == std::string::npos || end == std::string::npos ? body : body.substr(begin, end - begin);
    };
    EXPECT_EQ(text(a.body), text(b.body));

    ServerProcess bad({"--kv-type", "q4"});
    EXPECT_FALSE(bad.listening());
    EXPECT_EQ(bad.wait(), 2);
    EXPECT_NE(bad.output().find("--kv-type"), std::string::npos) << bad.output();
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
