// GGUF files as models, on files llama.cpp's own converter and quantizer
// made (tests/fixtures/gguf/README.md): the config their keys describe, the
// bf16 file's logits bitwise equal to the Hugging Face directory's, and the
// quantized files' greedy continuations equal to llama.cpp's up to the first
// step where llama.cpp itself saw a near-tie. The same for a small
// Qwen3-MoE (arch qwen3moe), whose experts are also compared one by one
// with the directory's.
//
// Files beyond the two in the fixtures (tinycode in bf16 and Q8_0, kq512 in
// Q6_K) are read from ../shared/llamacpp/gguf when a checkout has it, and
// those tests skip without it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cpu/cpu_backend.h"
#include "model/gguf.h"
#include "model/gguf_model.h"
#include "model/load_error.h"
#include "model/quant_blocks.h"
#include "test_support.h"

namespace tf::model {
namespace {

using testing::bitwise_equal;
using testing::fixture_path;
using testing::logits_in_chunks;
using testing::source_dir;
using testing::tinycode_dir;

// The file in the fixtures, else in ../shared; empty when neither has it.
std::string gguf_file(const std::string& name) {
    for (const std::string& dir : {fixture_path("gguf"), source_dir() + "/../shared/llamacpp/gguf"}) {
        if (std::filesystem::exists(dir + "/" + name)) return dir + "/" + name;
    }
    return {};
}

#define REQUIRE_GGUF(var, name)                                                      \
    const std::string var = gguf_file(name);                                         \
    if (var.empty()) GTEST_SKIP() << name << " is in neither the fixtures nor ../shared"

struct Reference {
    std::string file;
    int record = 0;
    std::vector<int32_t> prompt_ids, greedy_ids;
    std::vector<std::array<std::pair<int32_t, double>, 2>> top2;  // llama.cpp's two best at each step
};

std::vector<Reference> references(const std::string& file) {
    std::ifstream in(gguf_file("reference.jsonl"));
    EXPECT_TRUE(in) << "tests/fixtures/gguf/reference.jsonl";
    std::vector<Reference> out;
    for (std::string line; std::getline(in, line);) {
        const nlohmann::json j = nlohmann::json::parse(line);
        if (j["file"] != file) continue;
        Reference r;
        r.file = file;
        r.record = j["record_index"];
        r.prompt_ids = j["prompt_ids"].get<std::vector<int32_t>>();
        r.greedy_ids = j["greedy_ids"].get<std::vector<int32_t>>();
        for (const auto& step : j["greedy_top2"]) {
            r.top2.push_back({std::pair{step[0][0].get<int32_t>(), step[0][1].get<double>()},
                              std::pair{step[1][0].get<int32_t>(), step[1][1].get<double>()}});
        }
        out.push_back(std::move(r));
    }
    return out;
}

// Greedy decode (argmax, lowest id on ties) of `steps` ids after `prompt`,
// one forward per token; `logits_out` gets each step's logits.
std::vector<int32_t> greedy(Backend& backend, const std::vector<int32_t>& prompt, int steps,
                            std::vector<std::vector<float>>* logits_out = nullptr) {
    const int32_t vocab = backend.config().vocab_size;
    backend.open_stream(0, static_cast<int32_t>(prompt.size()) + steps + 1);
    std::vector<Row> rows;
    for (size_t i = 0; i < prompt.size(); ++i) rows.push_back({0, static_cast<int32_t>(i), prompt[i], i + 1 == prompt.size()});
    std::vector<float> logits;
    backend.forward(rows, logits);
    std::vector<int32_t> out;
    for (int s = 0; s < steps; ++s) {
        const auto best = static_cast<int32_t>(std::max_element(logits.begin(), logits.begin() + vocab) - logits.begin());
        out.push_back(best);
        if (logits_out) logits_out->emplace_back(logits.begin(), logits.begin() + vocab);
        if (s + 1 == steps) break;
        std::vector<Row> next = {{0, static_cast<int32_t>(prompt.size() + s), best, true}};
        backend.forward(next, logits);
    }
    backend.close_stream(0);
    return out;
}

TEST(GgufModel, TinycodesConfigFromItsKeysIsTheHuggingFaceOne) {
    REQUIRE_GGUF(path, "tinycode-q8_0.gguf");
    const GgufFile file = GgufFile::open(path);
    const ModelConfig gguf = gguf_model_config(file);
    const ModelConfig hf = load_model_config(tinycode_dir());
    EXPECT_EQ(gguf.architecture, hf.architecture);
    EXPECT_EQ(gguf.family, hf.family);
    EXPECT_EQ(gguf.vocab_size, hf.vocab_size);
    EXPECT_EQ(gguf.max_position_embeddings, hf.max_position_embeddings);
    EXPECT_EQ(gguf.hidden_size, hf.hidden_size);
    EXPECT_EQ(gguf.num_layers, hf.num_layers);
    EXPECT_EQ(gguf.num_heads, hf.num_heads);
    EXPECT_EQ(gguf.num_kv_heads, hf.num_kv_heads);
    EXPECT_EQ(gguf.head_dim, hf.head_dim);
    EXPECT_EQ(gguf.intermediate_size, hf.intermediate_size);
    EXPECT_EQ(gguf.rms_norm_eps, hf.rms_norm_eps);
    EXPECT_EQ(gguf.rope_theta, hf.rope_theta);
    EXPECT_EQ(gguf.tie_word_embeddings, hf.tie_word_embeddings);
    EXPECT_EQ(gguf.qkv_bias, hf.qkv_bias);
    EXPECT_EQ(gguf.qk_norm, hf.qk_norm);
    // eos 8191 (<|im_end|>) from the file, 8189 (<|endoftext|>) as an end of
    // generation by its text: the two generation_config.json names.
    std::vector<int32_t> eos = gguf.eos_token_ids, hf_eos = hf.eos_token_ids;
    std::sort(eos.begin(), eos.end());
    std::sort(hf_eos.begin(), hf_eos.end());
    EXPECT_EQ(eos, hf_eos);
}

TEST(GgufModel, TheBf16FilesLogitsAreBitwiseTheHuggingFaceDirectorys) {
    REQUIRE_GGUF(path, "tinycode-bf16.gguf");
    const cpu::kernels::Isa isa = cpu::kernels::best_isa();
    const cpu::kernels::Activations activations = cpu::kernels::default_activations(isa);
    const bool vnni = cpu::kernels::quant_vnni_supported(isa);
    // The default (f16) KV cache for the bitwise comparison.
    auto gguf = cpu::load_cpu_backend(path, 2, isa);
    auto hf = cpu::load_cpu_backend(tinycode_dir(), 2, isa);
    // An fp32 one for the greedy ids: with bf16 activations an f16 cache
    // may turn record 3's near tie at token 24 (0.005 apart in the fp32
    // forward) the other way (tests/cpu/oracle_test.cpp).
    auto gguf_f32_kv = cpu::load_cpu_backend(path, 2, isa, activations, {}, vnni, cpu::kernels::KvType::f32);
    EXPECT_NE(gguf->weights().summary().find("bf16"), std::string::npos) << gguf->weights().summary();
    for (const Reference& r : references("tinycode-bf16.gguf")) {
        const std::vector<float> a = logits_in_chunks(*gguf, 1, r.prompt_ids, {7, 1, 16});
        const std::vector<float> b = logits_in_chunks(*hf, 1, r.prompt_ids, {7, 1, 16});
        EXPECT_TRUE(bitwise_equal(a, b)) << "record " << r.record;
        // And llama.cpp's greedy ids on this file, which are the oracle's.
        EXPECT_EQ(greedy(*gguf_f32_kv, r.prompt_ids, 48), r.greedy_ids) << "record " << r.record;
    }
}

// A near-tie: llama.cpp's own top two were closer than this, in logits
// (which the logprob gap equals). Two correct int8 engines round
// differently: llama.cpp quantizes activations with fp16 scales (and in
// blocks of 256 for the k-quants), tensorfold with fp32 scales over 32, and
// llama.cpp keeps its KV cache in f16. Measured on these files at the steps
// where both pick the same id, the two engines' top-2 gaps differ by up to
// 0.23 (tinycode Q4_0 and Q8_0), 0.13 (kq512 Q4_K_M) and 0.12 (Q6_K); on
// the bf16 file, where tensorfold's logits are exact, llama.cpp's alone
// differ by up to 0.045. A margin under 0.25 is therefore one the rounding
// may decide, and where the engines part, both margins must be under it.
constexpr double kNearTie = 0.25;

void expect_llamacpp_greedy(const std::string& name) {
    const std::string path = gguf_file(name);
    if (path.empty()) GTEST_SKIP() << name << " is in neither the fixtures nor ../shared";
    auto backend = cpu::load_cpu_backend(path, 2, cpu::kernels::best_isa());
    int compared = 0, agreed_whole = 0;
    double worst = 0;
    for (const Reference& r : references(name)) {
        std::vector<std::vector<float>> logits;
        const std::vector<int32_t> ours = greedy(*backend, r.prompt_ids, static_cast<int>(r.greedy_ids.size()), &logits);
        size_t step = 0;
        while (step < ours.size() && ours[step] == r.greedy_ids[step]) {
            const auto& [a, b] = r.top2[step];
            const double their_gap = a.second - b.second, our_gap = logits[step][a.first] - logits[step][b.first];
            worst = std::max(worst, std::abs(their_gap - our_gap));
            ++step;
        }
        compared += static_cast<int>(step);
        if (step == ours.size()) {
            ++agreed_whole;
            continue;
        }
        // The first difference must be a near-tie for both engines: llama.cpp's
        // top two close, and our pick (its second, or on a random-weight
        // model sometimes a third token in the same cluster) above llama.cpp's
        // pick by less than the margin in our logits.
        const auto& [first, second] = r.top2[step];
        const double gap = first.second - second.second;
        EXPECT_LT(gap, kNearTie) << name << " record " << r.record << " step " << step << ": ours " << ours[step]
                                 << ", llama.cpp " << r.greedy_ids[step] << " by a margin of " << gap;
        const std::vector<float>& l = logits[step];
        EXPECT_LT(l[ours[step]] - l[first.first], kNearTie)
            << name << " record " << r.record << " step " << step << ": ours " << ours[step];
    }
    std::printf("%s: %d of the references agree on all 48 ids; %d ids compared; top-2 gaps differ by up to %.4f\n",
                name.c_str(), agreed_whole, compared, worst);
}

TEST(GgufModel, Q4_0GreedyIsLlamaCppsUpToANearTie) { expect_llamacpp_greedy("tinycode-q4_0.gguf"); }
TEST(GgufModel, Q8_0GreedyIsLlamaCppsUpToANearTie) { expect_llamacpp_greedy("tinycode-q8_0.gguf"); }
TEST(GgufModel, Q4_K_MGreedyIsLlamaCppsUpToANearTie) { expect_llamacpp_greedy("kq512-q4_k_m.gguf"); }
TEST(GgufModel, Q6_KGreedyIsLlamaCppsUpToANearTie) { expect_llamacpp_greedy("kq512-q6_k.gguf"); }

TEST(GgufModel, QuantizedTensorsKeepTheirTypes) {
    REQUIRE_GGUF(path, "kq512-q4_k_m.gguf");
    auto backend = cpu::load_cpu_backend(path, 1, cpu::kernels::best_isa());
    const cpu::Weights& w = backend->weights();
    EXPECT_EQ(w.lm_head().format, cpu::kernels::WeightFormat::q6_k);  // output.weight is Q6_K
    EXPECT_EQ(w.layers()[0].wq.format, cpu::kernels::WeightFormat::q4_k);
    EXPECT_EQ(w.layers()[3].w_down.format, cpu::kernels::WeightFormat::q6_k);
    EXPECT_EQ(w.layers()[0].w_down.format, cpu::kernels::WeightFormat::q4_k);
    const std::string summary = w.summary();
    EXPECT_NE(summary.find("repacked"), std::string::npos) << summary;
}

}  // namespace
}  // namespace tf::model

namespace tf::model {
namespace {

// make-checkpoint's small Llama and Qwen2, rebuilt from their seeds (the
// GGUFs in the fixtures were converted from exactly these bytes; the
// fixtures' README has the commands).
std::string make_small(const std::string& preset, const std::string& extra, uint32_t seed, const std::string& out) {
    const std::string command = std::string(TF_MAKE_CHECKPOINT) + " --preset " + preset +
                                " --hidden 64 --layers 2 --heads 4 --kv-heads 2 --head-dim 16 --intermediate 128"
                                " --vocab 8192 --tokenizer-from " + tinycode_dir() + " " + extra + " --seed " +
                                std::to_string(seed) + " --out " + out + " > /dev/null";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return out;
}

const std::vector<int32_t> kPrompt = testing::random_tokens(37, 8192, 11);

// llama.cpp's converter reorders the rows of every Llama Q and K head for
// its RoPE; read back, they must give the directory's logits to the bit.
TEST(GgufModel, ALlamaFilesPermutedQAndKRowsGiveTheDirectorysLogits) {
    testing::TempDir dir;
    const std::string hf = make_small("tiny-llama", "--tied false", 5, dir.str() + "/llama-hf");
    auto from_gguf = cpu::load_cpu_backend(fixture_path("gguf/tiny-llama-bf16.gguf"), 1, cpu::kernels::best_isa());
    auto from_hf = cpu::load_cpu_backend(hf, 1, cpu::kernels::best_isa());
    EXPECT_EQ(from_gguf->config().architecture, "LlamaForCausalLM");
    EXPECT_FALSE(from_gguf->config().tie_word_embeddings);
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*from_gguf, 1, kPrompt, {5, 1, 9}),
                              logits_in_chunks(*from_hf, 1, kPrompt, {5, 1, 9})));

    // The same rows in Q8_0 blocks: near the exact logits (a wrong order of
    // rows would scramble the attention and land far off).
    auto q8 = cpu::load_cpu_backend(fixture_path("gguf/tiny-llama-q8_0.gguf"), 1, cpu::kernels::best_isa());
    const std::vector<float> exact = logits_in_chunks(*from_hf, 1, kPrompt, {8});
    const std::vector<float> quantized = logits_in_chunks(*q8, 1, kPrompt, {8});
    ASSERT_EQ(exact.size(), quantized.size());
    double worst = 0, scale = 0;  // largest difference, largest logit
    for (size_t i = 0; i < exact.size(); ++i) {
        worst = std::max(worst, static_cast<double>(std::abs(exact[i] - quantized[i])));
        scale = std::max(scale, static_cast<double>(std::abs(exact[i])));
    }
    cpu::WeightOptions q8_0;
    q8_0.quantize = model::QuantType::q8_0;
    auto ours = cpu::load_cpu_backend(hf, 1, cpu::kernels::best_isa(),
                                      cpu::kernels::default_activations(cpu::kernels::best_isa()), q8_0);
    const std::vector<float> ours_q = logits_in_chunks(*ours, 1, kPrompt, {8});
    double ours_worst = 0;
    for (size_t i = 0; i < exact.size(); ++i) ours_worst = std::max(ours_worst, static_cast<double>(std::abs(exact[i] - ours_q[i])));
    // As far from the exact logits as tensorfold's own q8_0 of the directory
    // (0.12 and 0.118 of a largest logit of 4.5 when written).
    EXPECT_LT(worst, 1.5 * ours_worst) << "largest logit " << scale;
}

TEST(GgufModel, AQwen2FilesBiasesAndTiedEmbeddingGiveTheDirectorysLogits) {
    testing::TempDir dir;
    const std::string hf = make_small("tiny-qwen2", "--tied true", 6, dir.str() + "/qwen2-hf");
    auto from_gguf = cpu::load_cpu_backend(fixture_path("gguf/tiny-qwen2-bf16.gguf"), 2, cpu::kernels::best_isa());
    auto from_hf = cpu::load_cpu_backend(hf, 2, cpu::kernels::best_isa());
    EXPECT_TRUE(from_gguf->config().qkv_bias);
    EXPECT_TRUE(from_gguf->config().tie_word_embeddings);
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*from_gguf, 1, kPrompt, {3, 16}),
                              logits_in_chunks(*from_hf, 1, kPrompt, {3, 16})));
}

}  // namespace
}  // namespace tf::model

namespace tf::model {
namespace {

// make-checkpoint's small Qwen3-MoE, rebuilt from its seed: the directory the
// two tiny-qwen3-moe GGUFs in the fixtures were converted from (the
// fixtures' README has the commands).
std::string make_moe(const std::string& out) {
    const std::string command = std::string(TF_MAKE_CHECKPOINT) +
                                " --preset tiny-qwen3-moe --hidden 64 --layers 3 --heads 4 --kv-heads 2 --head-dim 16"
                                " --intermediate 128 --experts 8 --experts-per-token 2 --expert-intermediate 32"
                                " --mlp-only-layers '' --vocab 8192 --tied true --tokenizer-from " +
                                tinycode_dir() + " --seed 7 --out " + out + " > /dev/null";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return out;
}

constexpr const char* kMoeBf16 = "gguf/tiny-qwen3-moe-bf16.gguf";
constexpr const char* kMoeQ8_0 = "gguf/tiny-qwen3-moe-q8_0.gguf";

TEST(GgufMoeModel, TheConfigFromItsKeysIsTheHuggingFaceOne) {
    testing::TempDir dir;
    const ModelConfig hf = load_model_config(make_moe(dir.str() + "/moe-hf"));
    const ModelConfig gguf = gguf_model_config(GgufFile::open(fixture_path(kMoeBf16)));
    EXPECT_EQ(gguf.architecture, "Qwen3MoeForCausalLM");
    EXPECT_EQ(gguf.architecture, hf.architecture);
    EXPECT_EQ(gguf.family, hf.family);
    EXPECT_EQ(gguf.hidden_size, hf.hidden_size);
    EXPECT_EQ(gguf.num_layers, hf.num_layers);
    EXPECT_EQ(gguf.num_heads, hf.num_heads);
    EXPECT_EQ(gguf.num_kv_heads, hf.num_kv_heads);
    EXPECT_EQ(gguf.head_dim, hf.head_dim);
    EXPECT_EQ(gguf.intermediate_size, hf.intermediate_size);
    EXPECT_EQ(gguf.rope_theta, hf.rope_theta);
    EXPECT_EQ(gguf.rms_norm_eps, hf.rms_norm_eps);
    EXPECT_EQ(gguf.qk_norm, hf.qk_norm);
    EXPECT_EQ(gguf.tie_word_embeddings, hf.tie_word_embeddings);
    EXPECT_EQ(gguf.moe.num_experts, hf.moe.num_experts);
    EXPECT_EQ(gguf.moe.experts_per_token, hf.moe.experts_per_token);
    EXPECT_EQ(gguf.moe.expert_intermediate, hf.moe.expert_intermediate);
    EXPECT_EQ(gguf.moe.norm_topk_prob, hf.moe.norm_topk_prob);
    EXPECT_EQ(gguf.moe.router, hf.moe.router);
    EXPECT_EQ(gguf.sparse_layers, hf.sparse_layers);
    EXPECT_EQ(gguf.moe.num_experts, 8);
    EXPECT_EQ(gguf.sparse_layers, (std::vector<bool>{true, true, true}));
}

// Each expert's matrix out of the bf16 file is the directory's, byte for
// byte, and the router (F32 in the file) holds the directory's bf16 values.
TEST(GgufMoeModel, TheBf16FilesExpertViewsAreTheDirectorysBytes) {
    testing::TempDir dir;
    const Checkpoint hf = Checkpoint::open(make_moe(dir.str() + "/moe-hf"));
    auto file = std::make_shared<const GgufFile>(GgufFile::open(fixture_path(kMoeBf16)));
    const Checkpoint gguf = gguf_checkpoint(file, gguf_model_config(*file));
    int compared = 0;
    for (int layer = 0; layer < 3; ++layer) {
        const std::string mlp = "model.layers." + std::to_string(layer) + ".mlp.";
        for (int e = 0; e < 8; ++e) {
            for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
                const std::string name = mlp + "experts." + std::to_string(e) + "." + proj + ".weight";
                const TensorView* a = gguf.find(name);
                const TensorView* b = hf.find(name);
                ASSERT_TRUE(a && b) << name;
                EXPECT_EQ(a->shape, b->shape) << name;
                EXPECT_EQ(a->dtype, DType::bf16) << name;
                ASSERT_EQ(a->bytes, b->bytes) << name;
                EXPECT_EQ(std::memcmp(a->data, b->data, a->bytes), 0) << name;
                ++compared;
            }
        }
        const TensorView* router = gguf.find(mlp + "gate.weight");
        const TensorView* hf_router = hf.find(mlp + "gate.weight");
        ASSERT_TRUE(router && hf_router);
        EXPECT_EQ(router->dtype, DType::f32);
        ASSERT_EQ(router->shape, hf_router->shape);
        ASSERT_EQ(hf_router->dtype, DType::bf16);
        for (size_t i = 0; i < router->bytes / 4; ++i) {
            float ours;
            uint16_t bits;
            std::memcpy(&ours, router->data + 4 * i, 4);
            std::memcpy(&bits, hf_router->data + 2 * i, 2);
            ASSERT_EQ(ours, bf16_to_float(bits)) << mlp << "gate.weight [" << i << "]";
        }
    }
    EXPECT_EQ(compared, 3 * 8 * 3);
}

// Each expert's Q8_0 rows, dequantized, are the directory's rows to within
// a quantization step of their block: a view one expert or one row off
// would land on other random weights entirely.
TEST(GgufMoeModel, TheQ8_0FilesExpertRowsAreTheDirectorysWithinAStep) {
    testing::TempDir dir;
    const Checkpoint hf = Checkpoint::open(make_moe(dir.str() + "/moe-hf"));
    auto file = std::make_shared<const GgufFile>(GgufFile::open(fixture_path(kMoeQ8_0)));
    const Checkpoint gguf = gguf_checkpoint(file, gguf_model_config(*file));
    double worst_steps = 0;
    for (int layer = 0; layer < 3; ++layer) {
        for (int e = 0; e < 8; ++e) {
            for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
                const std::string name = "model.layers." + std::to_string(layer) + ".mlp.experts." + std::to_string(e) +
                                         "." + proj + ".weight";
                const TensorView* q = gguf.find(name);
                const TensorView* exact = hf.find(name);
                ASSERT_TRUE(q && exact) << name;
                ASSERT_EQ(q->quant, QuantType::q8_0) << name << " is " << q->dtype_text;
                ASSERT_EQ(q->shape, exact->shape) << name;
                const int64_t rows = q->shape[0], cols = q->shape[1];
                const size_t row_bytes = quant_row_bytes(QuantType::q8_0, cols);
                ASSERT_EQ(q->bytes, row_bytes * static_cast<size_t>(rows)) << name;
                std::vector<float> row(static_cast<size_t>(cols));
                for (int64_t r = 0; r < rows; ++r) {
                    dequantize_row(QuantType::q8_0, q->data + r * row_bytes, cols, row.data());
                    for (int64_t b = 0; b < cols; b += 32) {
                        float amax = 0;
                        std::vector<float> want(32);
                        for (int j = 0; j < 32; ++j) {
                            uint16_t bits;
                            std::memcpy(&bits, exact->data + 2 * (r * cols + b + j), 2);
                            want[j] = bf16_to_float(bits);
                            amax = std::max(amax, std::abs(want[j]));
                        }
                        const float step = amax / 127;
                        for (int j = 0; j < 32; ++j) {
                            const double off = std::abs(row[b + j] - want[j]) / step;
                            worst_steps = std::max(worst_steps, off);
                            ASSERT_LE(off, 1.0) << name << " row " << r << " column " << b + j;
                        }
                    }
                }
            }
        }
    }
    std::printf("Q8_0 expert rows: worst %.3f quantization steps from the directory's\n", worst_steps);
}

TEST(GgufMoeModel, TheBf16FilesLogitsAreBitwiseTheDirectorys) {
    testing::TempDir dir;
    const std::string hf = make_moe(dir.str() + "/moe-hf");
    auto from_gguf = cpu::load_cpu_backend(fixture_path(kMoeBf16), 2, cpu::kernels::best_isa());
    auto from_hf = cpu::load_cpu_backend(hf, 2, cpu::kernels::best_isa());
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*from_gguf, 1, kPrompt, {5, 1, 9}),
                              logits_in_chunks(*from_hf, 1, kPrompt, {5, 1, 9})));
}

// With experts a near-tie has a second source: a token whose k-th and
// (k+1)-th router scores are close reads one expert or the other depending
// on rounding, and the logits jump. On the bf16 file tensorfold's bf16- and
// f32-activation forwards differ by up to 3.7 in a logit at such steps, and
// by under 0.25 at all but 5 of the references' 288 steps; llama.cpp's
// logprobs are within 0.08 of ours at every step of four of the six
// prompts, and its largest differences (0.25 to 0.62) fall on single steps,
// as such flips do. So where the engines part, llama.cpp's own top two must
// be close, as for a dense model, and our pick must be within the margin of
// llama.cpp's in our forward or in the one with the other activations (bf16
// or f32) fed the same ids: some rounding of ours nearly chose what
// llama.cpp chose. (Checked passing with the avx512, avx2 and scalar paths
// too.)
void expect_moe_llamacpp_greedy(const std::string& name) {
    const cpu::kernels::Isa isa = cpu::kernels::best_isa();
    using cpu::kernels::Activations;
    const std::string path = fixture_path("gguf/" + name);
    auto backend = cpu::load_cpu_backend(path, 2, isa);
    // avx512-bf16 runs bf16 activations only; its f32 twin is plain avx512.
    const bool bf16 = cpu::kernels::default_activations(isa) == Activations::bf16;
    auto other = cpu::load_cpu_backend(path, 2, isa == cpu::kernels::Isa::avx512_bf16 ? cpu::kernels::Isa::avx512 : isa,
                                       bf16 ? Activations::f32 : Activations::bf16);
    const int32_t vocab = backend->config().vocab_size;
    int agreed_whole = 0, compared = 0, by_routing = 0;
    for (const Reference& r : references(name)) {
        std::vector<std::vector<float>> logits;
        const std::vector<int32_t> ours =
            greedy(*backend, r.prompt_ids, static_cast<int>(r.greedy_ids.size()), &logits);
        size_t step = 0;
        while (step < ours.size() && ours[step] == r.greedy_ids[step]) ++step;
        compared += static_cast<int>(step);
        if (step == ours.size()) {
            ++agreed_whole;
            continue;
        }
        const auto& [first, second] = r.top2[step];
        EXPECT_LT(first.second - second.second, kNearTie)
            << name << " record " << r.record << " step " << step << ": ours " << ours[step] << ", llama.cpp "
            << first.first << " by a margin of " << first.second - second.second;
        double margin = logits[step][ours[step]] - logits[step][first.first];
        if (margin >= kNearTie) {
            std::vector<int32_t> ids = r.prompt_ids;
            ids.insert(ids.end(), ours.begin(), ours.begin() + static_cast<std::ptrdiff_t>(step));
            const std::vector<float> all = logits_in_chunks(*other, 1, ids, {static_cast<int32_t>(ids.size())});
            const float* last = all.data() + (ids.size() - 1) * static_cast<size_t>(vocab);
            margin = last[ours[step]] - last[first.first];
            by_routing += margin < kNearTie ? 1 : 0;
        }
        EXPECT_LT(margin, kNearTie) << name << " record " << r.record << " step " << step << ": ours " << ours[step]
                                    << " over llama.cpp's " << first.first << " in both our forwards";
    }
    std::printf(
        "%s: %d of the references agree on all 48 ids; %d ids compared; %d partings judged by the other activations' "
        "forward\n",
        name.c_str(), agreed_whole, compared, by_routing);
}

TEST(GgufMoeModel, Bf16GreedyIsLlamaCppsUpToANearTie) { expect_moe_llamacpp_greedy("tiny-qwen3-moe-bf16.gguf"); }
TEST(GgufMoeModel, Q8_0GreedyIsLlamaCppsUpToANearTie) { expect_moe_llamacpp_greedy("tiny-qwen3-moe-q8_0.gguf"); }

}  // namespace
}  // namespace tf::model
