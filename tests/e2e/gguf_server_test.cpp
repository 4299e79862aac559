// `tensorfold serve FILE.gguf` through the real binary, on tinycode as
// llama.cpp's quantizer wrote it (tests/fixtures/gguf): the served name, the
// same tokens with Recall off, on and read-only, one record shared with the
// Hugging Face directory of the same tokenizer, and a broken file refused,
// naming it, before the server listens.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "recall_report.h"
#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string tinycode_gguf() { return source_dir() + "/tests/fixtures/gguf/tinycode-q4_0.gguf"; }

std::string request(const std::string& model) {
    return json{{"model", model},
                {"prompt", "def quicksort(items):\n    \"\"\"Sort a list.\"\"\"\n"},
                {"max_tokens", 64},
                {"temperature", 0.7},
                {"seed", 42}}
        .dump();
}

std::string reply_text(const Response& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return {};
    return json::parse(r.body)["choices"][0]["text"];
}

TEST(GgufServer, ServesUnderTheFilesStem) {
    ServerProcess server({}, tinycode_gguf());
    ASSERT_TRUE(server.listening()) << server.output();
    EXPECT_NE(server.output().find("Qwen3ForCausalLM from GGUF"), std::string::npos) << server.output();
    EXPECT_NE(server.output().find("repacked"), std::string::npos) << server.output();
    const json models = json::parse(server.get("/v1/models").body);
    EXPECT_EQ(models["data"][0]["id"], "tinycode-q4_0");
    // The chat template came from the file: the same prompt as the
    // directory's template renders.
    const auto chat = [](const std::string& model) {
        return json{{"model", model},
                    {"messages", json::array({json{{"role", "user"}, {"content", "Hi"}}})},
                    {"max_tokens", 8}}
            .dump();
    };
    const Response from_file = server.post("/v1/chat/completions", chat("tinycode-q4_0"));
    ASSERT_EQ(from_file.status, 200) << from_file.body;
    ServerProcess hf({});
    ASSERT_TRUE(hf.listening()) << hf.output();
    const Response from_dir = hf.post("/v1/chat/completions", chat("tinycode"));
    ASSERT_EQ(from_dir.status, 200) << from_dir.body;
    EXPECT_EQ(json::parse(from_file.body)["usage"]["prompt_tokens"], json::parse(from_dir.body)["usage"]["prompt_tokens"]);

    ServerProcess renamed({"--served-model-name", "coder"}, tinycode_gguf());
    ASSERT_TRUE(renamed.listening()) << renamed.output();
    EXPECT_EQ(json::parse(renamed.get("/v1/models").body)["data"][0]["id"], "coder");
}

TEST(GgufServer, RepliesAreTheSameTokensWithRecallOffOnAndReadOnly) {
    TempDir dir;
    std::string off_reply, on_first, on_second, read_only_reply;
    {
        ServerProcess off({}, tinycode_gguf());
        ASSERT_TRUE(off.listening()) << off.output();
        off_reply = reply_text(off.post("/v1/completions", request("tinycode-q4_0")));
    }
    {
        ServerProcess on({"--recall-dir", dir / "record"}, tinycode_gguf());
        ASSERT_TRUE(on.listening()) << on.output();
        on_first = reply_text(on.post("/v1/completions", request("tinycode-q4_0")));
        wait_for_ids(on, 64);
        on_second = reply_text(on.post("/v1/completions", request("tinycode-q4_0")));
        EXPECT_GT(wait_for_adds(on, 2)["tokens_landed"].get<uint64_t>(), 0u) << "the regenerated reply was copied";
    }
    {
        ServerProcess read_only({"--recall-dir", dir / "record", "--recall-read-only"}, tinycode_gguf());
        ASSERT_TRUE(read_only.listening()) << read_only.output();
        read_only_reply = reply_text(read_only.post("/v1/completions", request("tinycode-q4_0")));
    }
    EXPECT_FALSE(off_reply.empty());
    EXPECT_EQ(on_first, off_reply);
    EXPECT_EQ(on_second, off_reply);
    EXPECT_EQ(read_only_reply, off_reply);
}

// One tokenizer, one identity: the directory's server writes a record and
// the GGUF's server opens it as its own and drafts from it.
TEST(GgufServer, AGgufAndItsHuggingFaceDirectoryShareOneRecord) {
    TempDir dir;
    const std::string record = dir / "record";
    {
        ServerProcess hf({"--recall-dir", record});
        ASSERT_TRUE(hf.listening()) << hf.output();
        reply_text(hf.post("/v1/completions", request("tinycode")));
        wait_for_ids(hf, 64);
    }
    ServerProcess gguf({"--recall-dir", record}, tinycode_gguf());
    ASSERT_TRUE(gguf.listening()) << gguf.output();
    const json report = recall_report(gguf);
    EXPECT_EQ(report["state"], "writing");
    EXPECT_GE(report["ids"].get<uint64_t>(), 64u) << "the directory's ids are there";
}

TEST(GgufServer, ABrokenFileIsRefusedNamingItBeforeListening) {
    TempDir dir;
    const std::string broken = dir / "broken.gguf";
    fs::copy_file(tinycode_gguf(), broken);
    fs::resize_file(broken, 4096);  // the header and part of the vocabulary
    ServerProcess server({}, broken);
    EXPECT_FALSE(server.listening());
    EXPECT_EQ(server.wait(), 1);
    EXPECT_NE(server.output().find(broken + ": key tokenizer.ggml.tokens"), std::string::npos) << server.output();
    EXPECT_NE(server.output().find("truncated"), std::string::npos) << server.output();

    const std::string text = dir / "notes.txt";
    std::ofstream(text) << "not a model";
    ServerProcess wrong({}, text);
    EXPECT_FALSE(wrong.listening());
    EXPECT_NE(wrong.wait(), 0);
    EXPECT_NE(wrong.output().find("neither a model directory nor a .gguf file"), std::string::npos) << wrong.output();
}

}  // namespace
}  // namespace tf::e2e
