// Correctness against an independent PyTorch fp32 forward
// (tools/reference_forward.py) on random-weight Llama, Mistral (sliding
// window, sharded f16), Qwen2 (q/k/v bias, tied), Qwen3 (q/k norm),
// NemotronH (Mamba2 / attention / MLP hybrid, bf16) and Nemotron
// (LayerNorm1P, partial rotary, f32) checkpoints written by make-checkpoint
// from a seed. The committed fixtures
// hold the reference logits (tests/fixtures/make_reference_fixtures.sh);
// when /usr/bin/python3 can import torch, the reference is also re-run live.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cpu/cpu_backend.h"
#include "model/load_error.h"
#include "model/model_config.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/test_support.h"

namespace tf::cpu {
namespace {

using testing::fixture_path;
using testing::TempDir;

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in) << path;
    return nlohmann::json::parse(in);
}

// make-checkpoint (the real tool) with the fixture's recorded arguments.
void make_checkpoint(const nlohmann::json& fixture, const std::string& out) {
    std::string command = TF_MAKE_CHECKPOINT;
    for (const auto& arg : fixture.at("make_checkpoint_args")) command += " " + arg.get<std::string>();
    command += " --out " + out + " > /dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

std::vector<float> cpu_logits(const std::string& dir, const std::vector<int32_t>& tokens,
                              kernels::Activations activations, kernels::KvType kv = kernels::KvType::f32) {
    // The fastest path of the precision this CPU runs, whatever TF_ISA says.
    kernels::Isa isa = kernels::best_isa();
    if (activations == kernels::Activations::bf16 && kernels::isa_supported(kernels::Isa::avx512_bf16)) {
        isa = kernels::Isa::avx512_bf16;
    } else if (activations == kernels::Activations::f32 && isa == kernels::Isa::avx512_bf16) {
        isa = kernels::Isa::avx512;
    }
    auto backend = load_cpu_backend(dir, 2, isa, activations, {}, kernels::quant_vnni_supported(isa), kv);
    backend->open_stream(0, static_cast<int32_t>(tokens.size()));
    std::vector<model::Row> rows;
    for (size_t i = 0; i < tokens.size(); ++i) rows.push_back({0, static_cast<int32_t>(i), tokens[i], true});
    std::vector<float> logits;
    backend->forward(rows, logits);
    return logits;
}

// max |ours - reference| / max |reference|, over all positions.
double relative_error(const std::vector<float>& ours, const nlohmann::json& reference) {
    double max_diff = 0, max_ref = 0;
    size_t i = 0;
    for (const auto& row : reference)
        for (const auto& v : row) {
            const double r = v.get<double>();
            max_diff = std::max(max_diff, std::fabs(ours.at(i++) - r));
            max_ref = std::max(max_ref, std::fabs(r));
        }
    EXPECT_EQ(i, ours.size());
    return max_diff / max_ref;
}

class ReferenceFixture : public ::testing::TestWithParam<std::string> {};

// f32 activations over an f32 KV cache within 1e-4 of PyTorch's fp32
// forward; bf16 activations (each matmul input rounded to 8 significant
// bits) within 2e-2, measured at 5e-3..8e-3 on the four Llama-family
// random-weight models. The default f16 cache (keys and values rounded to
// 11 significant bits) within 2e-3 with f32 activations, measured at
// 3e-4..5e-4; a bf16 cache within 1e-2, a q8_0 one within 3e-2.
TEST_P(ReferenceFixture, CpuLogitsMatchThePytorchReferenceWithin1e4) {
    const nlohmann::json fixture = read_json(fixture_path("reference_" + GetParam() + ".json"));
    TempDir dir;
    make_checkpoint(fixture, dir.str());
    const auto tokens = fixture.at("tokens").get<std::vector<int32_t>>();
    const std::vector<float> ours = cpu_logits(dir.str(), tokens, kernels::Activations::f32);
    ASSERT_EQ(ours.size(), tokens.size() * fixture.at("vocab_size").get<size_t>());
    EXPECT_LE(relative_error(ours, fixture.at("logits")), 1e-4);
    const std::vector<float> bf16 = cpu_logits(dir.str(), tokens, kernels::Activations::bf16);
    EXPECT_LE(relative_error(bf16, fixture.at("logits")), 2e-2);
    const double f16_kv =
        relative_error(cpu_logits(dir.str(), tokens, kernels::Activations::f32, kernels::KvType::f16), fixture.at("logits"));
    const double bf16_kv =
        relative_error(cpu_logits(dir.str(), tokens, kernels::Activations::f32, kernels::KvType::bf16), fixture.at("logits"));
    EXPECT_LE(f16_kv, 2e-3);
    EXPECT_LE(bf16_kv, 1e-2);
    // q8_0 blocks are 32 dimensions: a smaller head is refused at load.
    double q8_kv = 0;
    if (model::load_model_config(dir.str()).head_dim % kernels::kKvQuantBlock == 0) {
        q8_kv = relative_error(cpu_logits(dir.str(), tokens, kernels::Activations::f32, kernels::KvType::q8_0),
                               fixture.at("logits"));
        EXPECT_LE(q8_kv, 3e-2);
    } else {
        EXPECT_THROW(cpu_logits(dir.str(), tokens, kernels::Activations::f32, kernels::KvType::q8_0), model::LoadError);
    }
    std::printf("%s: f16 KV %.2e, bf16 KV %.2e, q8_0 KV %s relative to the fp32 reference\n", GetParam().c_str(),
                f16_kv, bf16_kv, q8_kv > 0 ? std::to_string(q8_kv).c_str() : "refused (head_dim under 32)");
}

bool torch_available() { return std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") == 0; }

TEST_P(ReferenceFixture, LivePytorchReferenceAgreesWhenTorchIsInstalled) {
    if (!torch_available()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian python3-torch)";
    const nlohmann::json fixture = read_json(fixture_path("reference_" + GetParam() + ".json"));
    TempDir dir;
    make_checkpoint(fixture, (dir.path() / "model").string());
    std::string tokens;
    for (const auto& t : fixture.at("tokens")) tokens += (tokens.empty() ? "" : ",") + std::to_string(t.get<int>());
    const std::string out = (dir.path() / "reference.json").string();
    const std::string command = "/usr/bin/python3 " + testing::source_dir() + "/tools/reference_forward.py " +
                                (dir.path() / "model").string() + " --tokens " + tokens + " --out " + out;
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    const nlohmann::json live = read_json(out);
    const std::vector<float> ours = cpu_logits((dir.path() / "model").string(),
                                               fixture.at("tokens").get<std::vector<int32_t>>(), kernels::Activations::f32);
    EXPECT_LE(relative_error(ours, live.at("logits")), 1e-4);
    // The committed fixture is what the script computes today.
    double drift = 0;
    for (size_t r = 0; r < live.at("logits").size(); ++r)
        for (size_t v = 0; v < live.at("logits")[r].size(); ++v)
            drift = std::max(drift, std::fabs(live.at("logits")[r][v].get<double>() - fixture.at("logits")[r][v].get<double>()));
    EXPECT_LE(drift, 1e-5) << "the fixture is stale: rerun tests/fixtures/make_reference_fixtures.sh";
}

INSTANTIATE_TEST_SUITE_P(Architectures, ReferenceFixture, ::testing::Values("llama", "mistral", "qwen2", "qwen3", "nemotron_h",
                                                                               "nemotron"));

}  // namespace
}  // namespace tf::cpu
