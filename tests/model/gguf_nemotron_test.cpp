// GGUF files of llama.cpp's nemotron_h and nemotron_h_moe architectures, on
// files its own converter and quantizer made (tests/fixtures/gguf/README.md):
// the config their keys and tensors describe is the Hugging Face
// directory's, the bf16 files' logits are bitwise the directory's (rebuilt
// from its seed), and the greedy ids are llama.cpp's up to a near-tie.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cpu/cpu_backend.h"
#include "gguf_reference.h"
#include "model/gguf.h"
#include "model/gguf_model.h"
#include "test_support.h"

namespace tf::model {
namespace {

using gguf_reference::expect_moe_llamacpp_greedy;
using testing::bitwise_equal;
using testing::fixture_path;
using testing::logits_in_chunks;
using testing::tinycode_dir;

// The directories the fixtures were converted from, rebuilt from their
// seeds (the README has the commands; the converter also needed
// rms_norm_eps in config.json, which changes no weight).
struct Fixture {
    const char* gguf;
    const char* args;
};
constexpr Fixture kNemotronH = {"gguf/tiny-nemotron-h-bf16.gguf", "--preset tiny-nemotron-h --seed 31"};
constexpr Fixture kNemotronHMoe = {"gguf/tiny-nemotron-h-moe-bf16.gguf",
                                   "--preset tiny-nemotron-h-moe --shared-expert-intermediate 64 --seed 32"};
constexpr Fixture kNemotronHLatent = {
    "gguf/tiny-nemotron-h-moe-latent-bf16.gguf",
    "--preset tiny-nemotron-h-moe --shared-expert-intermediate 64 --moe-latent 32 --seed 33"};

std::string make_directory(const Fixture& fixture, const std::string& out) {
    const std::string command = std::string(TF_MAKE_CHECKPOINT) + " " + fixture.args +
                                " --vocab 8192 --tied true --tokenizer-from " + tinycode_dir() + " --out " + out +
                                " > /dev/null";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return out;
}

// Every field the forward reads, but three the file cannot carry: the
// converter writes context_length 2^20 for a model without RoPE, the eos
// ids come from the tokenizer files (as for every GGUF here), and a model
// without MLP layers has no intermediate_size in the file (it is unused).
void expect_same_config(const ModelConfig& gguf, const ModelConfig& hf) {
    EXPECT_EQ(gguf.architecture, hf.architecture);
    EXPECT_EQ(gguf.family, hf.family);
    EXPECT_EQ(gguf.vocab_size, hf.vocab_size);
    EXPECT_EQ(gguf.hidden_size, hf.hidden_size);
    EXPECT_EQ(gguf.num_layers, hf.num_layers);
    EXPECT_EQ(gguf.layer_kinds, hf.layer_kinds);
    EXPECT_EQ(gguf.num_heads, hf.num_heads);
    EXPECT_EQ(gguf.num_kv_heads, hf.num_kv_heads);
    EXPECT_EQ(gguf.head_dim, hf.head_dim);
    if (std::count(hf.layer_kinds.begin(), hf.layer_kinds.end(), LayerKind::mlp) > 0) {
        EXPECT_EQ(gguf.intermediate_size, hf.intermediate_size);
    }
    EXPECT_EQ(gguf.rms_norm_eps, hf.rms_norm_eps);
    EXPECT_EQ(gguf.tie_word_embeddings, hf.tie_word_embeddings);
    EXPECT_EQ(gguf.qkv_bias, hf.qkv_bias);
    EXPECT_EQ(gguf.o_bias, hf.o_bias);
    EXPECT_EQ(gguf.mlp_bias, hf.mlp_bias);
    EXPECT_EQ(gguf.norm, hf.norm);
    EXPECT_EQ(gguf.mlp, hf.mlp);
    EXPECT_EQ(gguf.rotary, hf.rotary);
    EXPECT_EQ(gguf.mamba.num_heads, hf.mamba.num_heads);
    EXPECT_EQ(gguf.mamba.head_dim, hf.mamba.head_dim);
    EXPECT_EQ(gguf.mamba.state_size, hf.mamba.state_size);
    EXPECT_EQ(gguf.mamba.groups, hf.mamba.groups);
    EXPECT_EQ(gguf.mamba.conv_kernel, hf.mamba.conv_kernel);
    EXPECT_EQ(gguf.mamba.conv_bias, hf.mamba.conv_bias);
    EXPECT_EQ(gguf.mamba.proj_bias, hf.mamba.proj_bias);
    EXPECT_EQ(gguf.mamba.dt_min, hf.mamba.dt_min);
    EXPECT_EQ(gguf.mamba.dt_max, hf.mamba.dt_max);
    EXPECT_EQ(gguf.moe.num_experts, hf.moe.num_experts);
    EXPECT_EQ(gguf.moe.experts_per_token, hf.moe.experts_per_token);
    EXPECT_EQ(gguf.moe.expert_intermediate, hf.moe.expert_intermediate);
    EXPECT_EQ(gguf.moe.shared_expert_intermediate, hf.moe.shared_expert_intermediate);
    EXPECT_EQ(gguf.moe.norm_topk_prob, hf.moe.norm_topk_prob);
    EXPECT_EQ(gguf.moe.router, hf.moe.router);
    EXPECT_EQ(gguf.moe.groups, hf.moe.groups);
    EXPECT_EQ(gguf.moe.top_groups, hf.moe.top_groups);
    EXPECT_EQ(gguf.moe.routed_scaling_factor, hf.moe.routed_scaling_factor);
    EXPECT_EQ(gguf.moe.latent_size, hf.moe.latent_size);
    EXPECT_EQ(gguf.sparse_layers, hf.sparse_layers);
    EXPECT_EQ(gguf.max_position_embeddings, 1 << 20);
}

TEST(GgufNemotronH, TheConfigFromItsKeysAndTensorsIsTheHuggingFaceOne) {
    testing::TempDir dir;
    const ModelConfig hf = load_model_config(make_directory(kNemotronH, dir.str() + "/tiny-nemotron-h-hf"));
    const ModelConfig gguf = gguf_model_config(GgufFile::open(fixture_path(kNemotronH.gguf)));
    expect_same_config(gguf, hf);
    EXPECT_EQ(gguf.layer_kinds, (std::vector<LayerKind>{LayerKind::mamba, LayerKind::mlp, LayerKind::mamba,
                                                        LayerKind::attention, LayerKind::mamba, LayerKind::mlp}));
}

TEST(GgufNemotronH, TheExpertFilesConfigsAreTheHuggingFaceOnes) {
    for (const Fixture& fixture : {kNemotronHMoe, kNemotronHLatent}) {
        testing::TempDir dir;
        const ModelConfig hf = load_model_config(make_directory(fixture, dir.str() + "/hf"));
        const ModelConfig gguf = gguf_model_config(GgufFile::open(fixture_path(fixture.gguf)));
        SCOPED_TRACE(fixture.gguf);
        expect_same_config(gguf, hf);
        EXPECT_EQ(gguf.moe.router, RouterKind::sigmoid);
        EXPECT_EQ(gguf.moe.groups, 2);
        EXPECT_EQ(gguf.moe.routed_scaling_factor, 2.5f);
    }
    EXPECT_EQ(gguf_model_config(GgufFile::open(fixture_path(kNemotronHLatent.gguf))).moe.latent_size, 32);
}

void expect_bitwise_logits(const Fixture& fixture) {
    testing::TempDir dir;
    const std::string hf = make_directory(fixture, dir.str() + "/hf");
    auto from_gguf = cpu::load_cpu_backend(fixture_path(fixture.gguf), 2, cpu::kernels::best_isa());
    auto from_hf = cpu::load_cpu_backend(hf, 2, cpu::kernels::best_isa());
    const std::vector<int32_t> prompt = testing::random_tokens(37, 8192, 11);
    // Chunks of several sizes: the Mamba2 state carries across them.
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*from_gguf, 1, prompt, {5, 1, 9}),
                              logits_in_chunks(*from_hf, 1, prompt, {5, 1, 9})))
        << fixture.gguf;
}

TEST(GgufNemotronH, TheBf16FilesLogitsAreBitwiseTheDirectorys) { expect_bitwise_logits(kNemotronH); }
TEST(GgufNemotronH, TheExpertBf16FilesLogitsAreBitwiseTheDirectorys) { expect_bitwise_logits(kNemotronHMoe); }
TEST(GgufNemotronH, TheLatentExpertBf16FilesLogitsAreBitwiseTheDirectorys) { expect_bitwise_logits(kNemotronHLatent); }

// The Q8_0 file keeps its blocks: the experts, the shared expert and the
// Mamba projections are Q8_0 views, A and the norms stay F32.
TEST(GgufNemotronH, TheQ8_0FileKeepsItsBlocks) {
    auto file = std::make_shared<const GgufFile>(GgufFile::open(fixture_path("gguf/tiny-nemotron-h-moe-q8_0.gguf")));
    const Checkpoint ckpt = gguf_checkpoint(file, gguf_model_config(*file));
    for (const char* name :
         {"backbone.layers.1.mixer.experts.7.up_proj.weight", "backbone.layers.1.mixer.shared_experts.down_proj.weight",
          "backbone.layers.0.mixer.in_proj.weight"}) {
        const TensorView* view = ckpt.find(name);
        ASSERT_TRUE(view) << name;
        EXPECT_EQ(view->quant, QuantType::q8_0) << name << " is " << view->dtype_text;
    }
    const TensorView* a = ckpt.find("backbone.layers.0.mixer.A_log");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->dtype, DType::f32);
    EXPECT_EQ(a->shape, (std::vector<int64_t>{8}));
}

// llama.cpp's greedy ids, teacher-forced: the prompt and llama.cpp's 48 ids
// run through one forward, and at each step llama.cpp's pick must be within
// a near-tie (kNearTie, gguf_reference.h) of our best logit. Without experts
// that holds at every step (measured: llama.cpp's pick at most 0.011 below
// ours, in either activation type). With experts a few single steps jump:
// a token whose router scores nearly tie picks another expert (or group) in
// one engine's rounding, and the logits move by up to 9. Measured, 2 to 7
// of the 288 steps of each file, in the bf16- and the f32-activation
// forward, mostly at different steps in the two, which a difference in what
// is computed would not do; a file whose router bias, routing scale or
// groups were dropped has 124 to 246 such steps. So up to 10 (3.5%) are
// allowed there, and none without experts. (Measured on the avx512-bf16,
// avx512, avx2 and scalar paths.)
void expect_llamacpp_greedy_forced(const std::string& name, int allowed_jumps) {
    auto backend = cpu::load_cpu_backend(fixture_path("gguf/" + name), 2, cpu::kernels::best_isa());
    const int32_t vocab = backend->config().vocab_size;
    int steps = 0, jumps = 0;
    double worst = 0;
    for (const gguf_reference::Reference& r : gguf_reference::references(name)) {
        std::vector<int32_t> ids = r.prompt_ids;
        ids.insert(ids.end(), r.greedy_ids.begin(), r.greedy_ids.end() - 1);
        const std::vector<float> all = logits_in_chunks(*backend, 1, ids, {static_cast<int32_t>(ids.size())});
        for (size_t s = 0; s < r.greedy_ids.size(); ++s) {
            const float* l = all.data() + (r.prompt_ids.size() - 1 + s) * static_cast<size_t>(vocab);
            const double behind = *std::max_element(l, l + vocab) - l[r.greedy_ids[s]];
            ++steps;
            worst = std::max(worst, behind);
            if (behind < gguf_reference::kNearTie) continue;
            ++jumps;
            std::printf("%s record %d step %zu: llama.cpp's %d is %.3f below our best (its own margin %.3f)\n",
                        name.c_str(), r.record, s, r.greedy_ids[s], behind, r.top2[s][0].second - r.top2[s][1].second);
        }
    }
    EXPECT_EQ(steps, 6 * 48) << name;
    EXPECT_LE(jumps, allowed_jumps) << name << ": llama.cpp's pick is a near-tie or more below ours at " << jumps
                                    << " of " << steps << " steps";
    std::printf("%s: %d steps, %d of them jumps, llama.cpp's pick at most %.3f below ours\n", name.c_str(), steps,
                jumps, worst);
}

TEST(GgufNemotronH, Bf16GreedyIsLlamaCppsAtEveryStep) {
    expect_llamacpp_greedy_forced("tiny-nemotron-h-bf16.gguf", 0);
    // And free-running, up to a near-tie, as the other GGUF files are judged.
    expect_moe_llamacpp_greedy("tiny-nemotron-h-bf16.gguf");
}
TEST(GgufNemotronH, ExpertBf16GreedyIsLlamaCppsButForRoutingJumps) {
    expect_llamacpp_greedy_forced("tiny-nemotron-h-moe-bf16.gguf", 10);
}
TEST(GgufNemotronH, ExpertQ8_0GreedyIsLlamaCppsButForRoutingJumps) {
    expect_llamacpp_greedy_forced("tiny-nemotron-h-moe-q8_0.gguf", 10);
}
TEST(GgufNemotronH, LatentExpertBf16GreedyIsLlamaCppsButForRoutingJumps) {
    expect_llamacpp_greedy_forced("tiny-nemotron-h-moe-latent-bf16.gguf", 10);
}

}  // namespace
}  // namespace tf::model
