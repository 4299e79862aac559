// make-checkpoint's library: seeded, never-zero weights, the 8B presets'
// shapes, and the tokenizer copied beside the weights.
#include <gtest/gtest.h>

#include <filesystem>

#include "model/checkpoint_writer.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "test_support.h"

namespace tf::model {
namespace {

uint64_t parameters(const CheckpointSpec& spec) {
    uint64_t total = 0;
    for (const TensorSpec& t : checkpoint_tensors(spec)) {
        uint64_t n = 1;
        for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
        total += n;
    }
    return total;
}

TEST(CheckpointWriter, EightBillionPresetsHaveTheirModelsParameterCounts) {
    EXPECT_EQ(parameters(preset_spec("qwen3-8b")), 8190735360u);   // Qwen3-8B
    EXPECT_EQ(parameters(preset_spec("llama3-8b")), 8030261248u);  // Meta-Llama-3-8B
}

TEST(CheckpointWriter, ValuesAreSeededAndNeverZero) {
    CheckpointSpec a = preset_spec("tiny-llama"), b = a;
    b.seed = a.seed + 1;
    int differ = 0;
    for (uint64_t i = 0; i < 10000; ++i) {
        const float va = checkpoint_value(a, "model.layers.0.mlp.up_proj.weight", {96, 64}, i);
        EXPECT_NE(float_to_bf16(va) & 0x7FFF, 0) << i;
        EXPECT_EQ(va, checkpoint_value(a, "model.layers.0.mlp.up_proj.weight", {96, 64}, i));
        differ += va != checkpoint_value(b, "model.layers.0.mlp.up_proj.weight", {96, 64}, i);
    }
    EXPECT_GT(differ, 9900);
}

TEST(CheckpointWriter, WritesALoadableDirectoryWithTheTokenizerCopied) {
    testing::TempDir dir;
    CheckpointSpec spec = preset_spec("tiny-qwen2");
    spec.eos_token_ids = {3, 4};
    write_checkpoint(spec, dir.str(), testing::tinycode_dir());
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "tokenizer.json"));
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "tokenizer_config.json"));
    ModelConfig c = load_model_config(dir.str());
    EXPECT_EQ(c.architecture, "Qwen2ForCausalLM");
    EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{3, 4}));
    EXPECT_NO_THROW(Weights::load(dir.str()));
}

TEST(CheckpointWriter, RoundsToNearestEven) {
    EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(bf16_to_float(float_to_bf16(1.00390625f)), 1.0f);  // halfway: to even
    EXPECT_EQ(float_to_half(1.0f), 0x3C00);
    EXPECT_EQ(float_to_half(-2.0f), 0xC000);
    EXPECT_EQ(half_to_float(float_to_half(65504.0f)), 65504.0f);
    EXPECT_EQ(half_to_float(float_to_half(1e-7f)), half_to_float(2));  // 1.68 x the smallest subnormal: 2 of them
}

}  // namespace
}  // namespace tf::model
