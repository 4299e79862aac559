// Safetensors on real files in a temp dir: single and sharded checkpoints
// in bf16, f16 and f32 load and agree; every malformed input is a LoadError
// that names the file and the tensor, never a crash.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "cpu/cpu_backend.h"
#include "cpu/kernels/matmul.h"
#include "cpu/weights.h"
#include "model/checkpoint_writer.h"
#include "model/load_error.h"
#include "model/safetensors.h"
#include "test_support.h"

namespace tf::model {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}
std::string u64_le(uint64_t v) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
    return s;
}
// A safetensors file from a header (JSON) and `data_bytes` data bytes.
void write_safetensors(const fs::path& path, const std::string& header, size_t data_bytes) {
    write_bytes(path, u64_le(header.size()) + header + std::string(data_bytes, '\x01'));
}

// Expects Weights::load(dir) to throw a LoadError containing every needle.
void expect_load_error(const fs::path& dir, std::initializer_list<std::string> needles) {
    try {
        cpu::Weights::load(dir.string());
        FAIL() << "loaded " << dir;
    } catch (const LoadError& e) {
        for (const auto& needle : needles) EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

CheckpointSpec tiny() {
    CheckpointSpec s = preset_spec("tiny-llama");
    s.seed = 5;
    return s;
}

TEST(Safetensors, OpensATensorWithItsShapeDtypeAndBytes) {
    TempDir dir;
    write_checkpoint(tiny(), dir.str());
    Checkpoint c = Checkpoint::open(dir.str());
    const TensorView& t = c.require("model.layers.1.self_attn.q_proj.weight", {64, 64});
    EXPECT_EQ(t.dtype, DType::bf16);
    EXPECT_EQ(t.bytes, 64u * 64u * 2u);
    EXPECT_EQ(t.file, (dir.path() / "model.safetensors").string());
}

TEST(Safetensors, ShardedAndSingleFileCheckpointsGiveBitIdenticalLogits) {
    TempDir single, sharded;
    CheckpointSpec spec = tiny();
    write_checkpoint(spec, single.str());
    spec.shards = 3;
    write_checkpoint(spec, sharded.str());
    EXPECT_TRUE(fs::exists(sharded.path() / "model.safetensors.index.json"));
    EXPECT_TRUE(fs::exists(sharded.path() / "model-00003-of-00003.safetensors"));
    const auto tokens = testing::random_tokens(6, 256, 1);
    auto a = cpu::load_cpu_backend(single.str(), 1);
    auto b = cpu::load_cpu_backend(sharded.str(), 1);
    EXPECT_TRUE(testing::bitwise_equal(testing::logits_in_chunks(*a, 0, tokens, {6}),
                                       testing::logits_in_chunks(*b, 0, tokens, {6})));
}

TEST(Safetensors, F16AndF32CheckpointsHoldTheSameValuesAsTheirSource) {
    // f16 and f32 hold more precision than bf16, so compare values, not logits.
    for (DType dtype : {DType::f16, DType::f32}) {
        TempDir dir;
        CheckpointSpec spec = tiny();
        spec.dtype = dtype;
        write_checkpoint(spec, dir.str());
        auto weights = cpu::Weights::load(dir.str());
        const cpu::kernels::WeightMatrix& wq = weights->layers()[0].wq;
        for (int32_t k : {0, 1, 31, 33, 63}) {
            const float written = checkpoint_value(spec, "model.layers.0.self_attn.q_proj.weight", {64, 64}, 64 + k);
            const float expected = dtype == DType::f32 ? written : half_to_float(float_to_half(written));
            EXPECT_EQ(cpu::kernels::weight_at(wq, 1, k), expected) << dtype_name(dtype) << " k=" << k;
        }
    }
}

TEST(SafetensorsErrors, TruncatedFileShorterThanTheLengthField) {
    TempDir dir;
    write_checkpoint(tiny(), dir.str());
    write_bytes(dir.path() / "model.safetensors", "abc");
    expect_load_error(dir.path(), {"model.safetensors", "truncated"});
}

TEST(SafetensorsErrors, HeaderLengthBeyondTheFile) {
    TempDir dir;
    write_checkpoint(tiny(), dir.str());
    write_bytes(dir.path() / "model.safetensors", u64_le(1'000'000) + "{}");
    expect_load_error(dir.path(), {"model.safetensors", "header length 1000000 runs past the end"});
}

TEST(SafetensorsErrors, HeaderNotJson) {
    TempDir dir;
    write_checkpoint(tiny(), dir.str());
    write_safetensors(dir.path() / "model.safetensors", "{\"a\": [1, 2", 0);
    expect_load_error(dir.path(), {"model.safetensors", "header is not valid JSON"});
}

TEST(SafetensorsErrors, DataOffsetsOutOfRange) {
    TempDir dir;
    write_checkpoint(tiny(), dir.str());
    write_safetensors(dir.path() / "model.safetensors",
                      R"({"model.norm.weight": {"dtype": "BF16", "shape": [64], "data_offsets": [0, 128]}})", 100);
    expect_load_error(dir.path(), {"model.safetensors", "tensor model.norm.weight", "data_offsets [0, 128]"});
}

TEST(SafetensorsErrors, TruncatedDataIsCaughtByTheOffsets) {
    TempDir dir;
    write_checkpoint(tiny(), dir.str());
    const std::string bytes = read_bytes(dir.path() / "model.safetensors");
    write_bytes(dir.path() / "model.safetensors", bytes.substr(0, bytes.size() - 100));
    expect_load_error(dir.path(), {"model.safetensors", "outside the file's", "truncated file?"});
}

TEST(SafetensorsErrors, SizeNotMatchingShapeAndDtype) {
    TempDir dir;
    write_checkpoint(tiny(), dir.str());
    write_safetensors(dir.path() / "model.safetensors",
                      R"({"model.norm.weight": {"dtype": "F32", "shape": [64], "data_offsets": [0, 128]}})", 128);
    expect_load_error(dir.path(), {"tensor model.norm.weight", "holds 128 bytes but shape [64] of F32 needs 256"});
}

TEST(SafetensorsErrors, MissingTensor) {
    TempDir dir;
    CheckpointSpec spec = tiny();
    spec.tie_word_embeddings = true;  // no lm_head.weight written...
    write_checkpoint(spec, dir.str());
    auto config = nlohmann::json::parse(read_bytes(dir.path() / "config.json"));
    config["tie_word_embeddings"] = false;  // ...but config.json now needs one
    write_bytes(dir.path() / "config.json", config.dump());
    expect_load_error(dir.path(), {"model.safetensors", "tensor lm_head.weight is missing"});
}

TEST(SafetensorsErrors, WrongShapeNamesFileTensorAndBothShapes) {
    TempDir dir;
    write_checkpoint(tiny(), dir.str());
    auto config = nlohmann::json::parse(read_bytes(dir.path() / "config.json"));
    config["intermediate_size"] = 97;
    write_bytes(dir.path() / "config.json", config.dump());
    expect_load_error(dir.path(), {"model.safetensors: tensor model.layers.0.mlp.gate_proj.weight has shape [96, 64], "
                                   "expected [97, 64]"});
}

TEST(SafetensorsErrors, WrongDtype) {
    TempDir dir;
    write_checkpoint(tiny(), dir.str());
    write_safetensors(dir.path() / "model.safetensors",
                      R"({"model.embed_tokens.weight": {"dtype": "I64", "shape": [256, 64], "data_offsets": [0, 131072]}})",
                      131072);
    expect_load_error(dir.path(), {"model.safetensors", "tensor model.embed_tokens.weight has dtype I64"});
}

TEST(SafetensorsErrors, UnknownArchitecture) {
    TempDir dir;
    write_checkpoint(tiny(), dir.str());
    auto config = nlohmann::json::parse(read_bytes(dir.path() / "config.json"));
    config["architectures"] = {"FalconForCausalLM"};
    write_bytes(dir.path() / "config.json", config.dump());
    expect_load_error(dir.path(), {"config.json", "FalconForCausalLM", "not supported"});
}

TEST(SafetensorsErrors, IndexNamingAMissingShard) {
    TempDir dir;
    CheckpointSpec spec = tiny();
    spec.shards = 2;
    write_checkpoint(spec, dir.str());
    fs::remove(dir.path() / "model-00002-of-00002.safetensors");
    expect_load_error(dir.path(), {"model.safetensors.index.json", "shard model-00002-of-00002.safetensors",
                                   "does not exist"});
}

TEST(SafetensorsErrors, IndexNamingATensorTheShardLacks) {
    TempDir dir;
    CheckpointSpec spec = tiny();
    spec.shards = 2;
    write_checkpoint(spec, dir.str());
    auto index = nlohmann::json::parse(read_bytes(dir.path() / "model.safetensors.index.json"));
    index["weight_map"]["model.extra.weight"] = "model-00001-of-00002.safetensors";
    write_bytes(dir.path() / "model.safetensors.index.json", index.dump());
    expect_load_error(dir.path(), {"model-00001-of-00002.safetensors", "tensor model.extra.weight", "missing"});
}

TEST(SafetensorsErrors, NoCheckpointFilesAtAll) {
    TempDir dir;
    write_checkpoint(tiny(), dir.str());
    fs::remove(dir.path() / "model.safetensors");
    expect_load_error(dir.path(), {"neither model.safetensors nor model.safetensors.index.json"});
}

}  // namespace
}  // namespace tf::model
