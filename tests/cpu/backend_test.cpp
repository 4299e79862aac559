// The Backend interface's contract on the CPU backend: streams, lengths,
// which rows return logits, and clear errors for misuse.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "cpu/cpu_backend.h"
#include "model/checkpoint_writer.h"
#include "model/load_error.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/test_support.h"

namespace tf::cpu {
namespace {

using testing::TempDir;

class BackendContract : public ::testing::Test {
protected:
    void SetUp() override {
        model::write_checkpoint(model::preset_spec("tiny-qwen3"), dir_.str());
        backend_ = load_cpu_backend(dir_.str(), 2);
    }
    TempDir dir_;
    std::unique_ptr<model::Backend> backend_;
};

TEST_F(BackendContract, LogitsComeOnlyForRowsThatAskInRowOrder) {
    backend_->open_stream(1, 8);
    backend_->open_stream(2, 8);
    std::vector<float> both, first_only;
    std::vector<model::Row> rows = {{1, 0, 10, true}, {2, 0, 20, true}};
    backend_->forward(rows, both);
    ASSERT_EQ(both.size(), 2u * 256u);
    backend_->truncate(1, 0);
    backend_->truncate(2, 0);
    rows = {{1, 0, 10, true}, {2, 0, 20, false}};
    backend_->forward(rows, first_only);
    ASSERT_EQ(first_only.size(), 256u);
    EXPECT_TRUE(testing::bitwise_equal(first_only, std::vector<float>(both.begin(), both.begin() + 256)));
    EXPECT_EQ(backend_->stream_length(1), 1);
    EXPECT_EQ(backend_->stream_length(2), 1);
}

// Rows come back as tokens: each sampling row's token is model::sample()
// over the logits that row would return, at position + 1, with the sampler
// it names; only rows that ask get logits, and a row may ask for both.
TEST_F(BackendContract, SamplingRowsReturnTheTokenOfTheirOwnLogits) {
    const std::vector<model::TokenId> prompt = {3, 14, 15, 92, 65, 35};
    const std::vector<model::SamplingParams> samplers = {{.temperature = 0.0f},
                                                         {.temperature = 0.8f, .top_p = 0.9f, .seed = 7},
                                                         {.temperature = 1.5f, .seed = 99},
                                                         {.temperature = 1.0f, .top_k = 5, .min_p = 0.05f, .seed = 3}};
    backend_->open_stream(1, 16);
    backend_->open_stream(2, 16);
    std::vector<model::Row> rows;
    for (int32_t i = 0; i < 6; ++i) rows.push_back({1, i, prompt[i], true, i % 4});
    for (int32_t i = 0; i < 4; ++i) rows.push_back({2, i, prompt[5 - i], i == 2, i == 1 ? -1 : 3 - i});
    model::RowOutputs out;
    backend_->forward(rows, samplers, out);
    ASSERT_EQ(out.tokens.size(), 9u);
    ASSERT_EQ(out.logits.size(), 7u * 256u);

    // The same rows again, every one returning logits, sampled here.
    backend_->truncate(1, 0);
    backend_->truncate(2, 0);
    std::vector<model::Row> all = rows;
    for (model::Row& row : all) row.want_logits = true, row.sampler = -1;
    std::vector<float> logits;
    backend_->forward(all, logits);
    ASSERT_EQ(logits.size(), 10u * 256u);
    size_t token = 0, wanted = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
        const std::span<const float> own(logits.data() + r * 256, 256);
        if (rows[r].sampler >= 0) {
            EXPECT_EQ(out.tokens[token++], sample(own, samplers[rows[r].sampler], rows[r].position + 1)) << "row " << r;
        }
        if (rows[r].want_logits) {
            EXPECT_EQ(std::memcmp(out.logits.data() + wanted++ * 256, own.data(), 256 * sizeof(float)), 0) << "row " << r;
        }
    }
}

TEST_F(BackendContract, ASamplerOutsideTheListIsRefusedBeforeAnythingRuns) {
    backend_->open_stream(1, 8);
    const model::SamplingParams greedy{.temperature = 0.0f};
    model::RowOutputs out;
    const std::vector<model::Row> rows = {{1, 0, 10, false, 0}, {1, 1, 11, false, 1}};
    EXPECT_THROW(backend_->forward(rows, {&greedy, 1}, out), std::invalid_argument);
    EXPECT_EQ(backend_->stream_length(1), 0);
    backend_->forward(std::span(rows).first(1), {&greedy, 1}, out);
    EXPECT_EQ(out.tokens.size(), 1u);
    EXPECT_TRUE(out.logits.empty());
}

// A wrong TF_ISA or TF_ACTIVATIONS is refused by name before any file is
// read: the directory here does not exist, and the error is not about it.
TEST(BackendPathVariables, AreCheckedBeforeTheModelIsLoaded) {
    struct Restore {
        std::string isa, activations;
        bool had_isa, had_activations;
        Restore() {
            const char* i = std::getenv("TF_ISA");
            const char* a = std::getenv("TF_ACTIVATIONS");
            had_isa = i != nullptr, had_activations = a != nullptr;
            isa = i ? i : "", activations = a ? a : "";
        }
        ~Restore() {
            had_isa ? setenv("TF_ISA", isa.c_str(), 1) : unsetenv("TF_ISA");
            had_activations ? setenv("TF_ACTIVATIONS", activations.c_str(), 1) : unsetenv("TF_ACTIVATIONS");
        }
    } restore;
    auto message = [](const char* isa, const char* activations) {
        setenv("TF_ISA", isa, 1);
        setenv("TF_ACTIVATIONS", activations, 1);
        try {
            load_cpu_backend("/nonexistent/tensorfold-model", 1);
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(message("avx9000", "auto").rfind("TF_ISA: ", 0), 0u) << message("avx9000", "auto");
    EXPECT_EQ(message("scalar", "fp4").rfind("TF_ACTIVATIONS: ", 0), 0u) << message("scalar", "fp4");
    EXPECT_NE(message("scalar", "bf16").find("/nonexistent/tensorfold-model"), std::string::npos);
}

TEST_F(BackendContract, EmptyForwardReturnsNoLogits) {
    std::vector<float> logits(5);
    backend_->forward({}, logits);
    EXPECT_TRUE(logits.empty());
}

TEST_F(BackendContract, MisuseIsRefusedWithAReason) {
    backend_->open_stream(1, 4);
    EXPECT_THROW(backend_->open_stream(1, 4), std::invalid_argument);
    EXPECT_THROW(backend_->stream_length(9), std::invalid_argument);
    std::vector<float> logits;
    std::vector<model::Row> gap = {{1, 1, 5, true}};  // position 0 was never written
    EXPECT_THROW(backend_->forward(gap, logits), std::invalid_argument);
    std::vector<model::Row> bad_token = {{1, 0, 256, true}};
    EXPECT_THROW(backend_->forward(bad_token, logits), std::invalid_argument);
    std::vector<model::Row> full = {
        {1, 0, 1, false}, {1, 1, 1, false}, {1, 2, 1, false}, {1, 3, 1, false}, {1, 4, 1, true}};
    EXPECT_THROW(backend_->forward(full, logits), std::invalid_argument);
    EXPECT_EQ(backend_->stream_length(1), 0);  // a refused forward changes nothing
    EXPECT_THROW(backend_->truncate(1, 1), std::invalid_argument);
    backend_->open_stream(2, 2);
    EXPECT_THROW(backend_->copy_prefix(1, 2, 1), std::invalid_argument);
    backend_->close_stream(1);
    EXPECT_THROW(backend_->close_stream(1), std::invalid_argument);
}

TEST(BackendLoad, UnsupportedHeadDimIsALoadError) {
    TempDir dir;
    model::CheckpointSpec spec = model::preset_spec("tiny-llama");
    spec.head_dim = 24;
    model::write_checkpoint(spec, dir.str());
    EXPECT_THROW(load_cpu_backend(dir.str(), 1), model::LoadError);
}

TEST(BackendLoad, ConfigReportsWhatConfigJsonSaid) {
    auto backend = load_cpu_backend(testing::tinycode_dir(), 1);
    EXPECT_EQ(backend->config().architecture, "Qwen3ForCausalLM");
    EXPECT_EQ(backend->config().vocab_size, 8192);
}

}  // namespace
}  // namespace tf::cpu
