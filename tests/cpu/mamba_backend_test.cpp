// The CPU backend on NemotronH (Mamba2, attention and MLP layers), bitwise:
// a Mamba row's logits are the same in one prefill, one token at a time, in
// verify chunks, mixed with other streams, at any thread count and on every
// SIMD path; a round whose drafts were all, partly or not at all rejected
// leaves the state exactly as if only the accepted rows had run; and the
// lengths a stream can return to (holds_state_at) are the ones truncate and
// copy_prefix accept. The checkpoint is make-checkpoint's tiny-nemotron-h,
// written from a seed into a temporary directory.
#include <gtest/gtest.h>

#include <algorithm>

#include "cpu/cpu_backend.h"
#include "model/checkpoint_writer.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/test_support.h"

namespace tf::cpu {
namespace {

using kernels::Isa;
using testing::bitwise_equal;
using testing::logits_in_chunks;
using testing::random_tokens;
using testing::TempDir;

constexpr int32_t kTokens = 80;

class MambaBackend : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new TempDir();
        model::CheckpointSpec spec = model::preset_spec("tiny-nemotron-h");
        spec.seed = 21;
        model::write_checkpoint(spec, dir_->str());
    }
    static void TearDownTestSuite() {
        delete dir_;
        dir_ = nullptr;
    }
    static std::unique_ptr<CpuBackend> backend(int threads, Isa isa = testing::fastest_isa(kernels::Activations::f32)) {
        return load_cpu_backend(dir_->str(), threads, isa, kernels::Activations::f32);
    }
    void SetUp() override {
        backend_ = backend(2);
        ASSERT_TRUE(backend_->config().recurrent());
        vocab_ = backend_->config().vocab_size;
        tokens_ = random_tokens(kTokens, vocab_, 42);
        prefill_ = logits_in_chunks(*backend_, 0, tokens_, {kTokens});
    }
    // Runs `tokens` on `stream` (open, at `position`) as one forward; returns their logits.
    std::vector<float> run(model::StreamId stream, int32_t position, const std::vector<int32_t>& tokens) {
        std::vector<model::Row> rows;
        for (size_t i = 0; i < tokens.size(); ++i)
            rows.push_back({stream, position + static_cast<int32_t>(i), tokens[i], true});
        std::vector<float> logits;
        backend_->forward(rows, logits);
        return logits;
    }
    std::vector<float> prefill_rows(int32_t first, int32_t count) const {
        return {prefill_.begin() + static_cast<ptrdiff_t>(first) * vocab_,
                prefill_.begin() + static_cast<ptrdiff_t>(first + count) * vocab_};
    }
    std::vector<int32_t> slice(int32_t first, int32_t count) const {
        return {tokens_.begin() + first, tokens_.begin() + first + count};
    }

    static TempDir* dir_;
    std::unique_ptr<CpuBackend> backend_;
    int32_t vocab_ = 0;
    std::vector<int32_t> tokens_;
    std::vector<float> prefill_;
};

TempDir* MambaBackend::dir_ = nullptr;

TEST_F(MambaBackend, OneTokenAtATimeAndVerifyChunksEqualOnePrefill) {
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend_, 1, tokens_, {1}), prefill_));
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend_, 2, tokens_, {2, 3, 5, 8, 13, 4, 7, 16, 9, 13}), prefill_));
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend_, 3, tokens_, {1, 64, 15}), prefill_));
}

TEST_F(MambaBackend, RowsMixedWithOtherStreamsEqualOnePrefill) {
    const auto other = random_tokens(kTokens + 30, vocab_, 7);
    backend_->open_stream(1, kTokens);
    backend_->open_stream(2, kTokens + 30);
    std::vector<model::Row> warm;
    for (int32_t i = 0; i < 30; ++i) warm.push_back({2, i, other[i], false});
    std::vector<float> ignored;
    backend_->forward(warm, ignored);
    // Stream 1's rows first, last, and interleaved with stream 2's.
    std::vector<float> ours;
    int32_t p = 0;
    for (int32_t chunk : {5, 9, 17, 20, 29}) {
        std::vector<model::Row> rows;
        for (int32_t i = 0, j = 0; i < chunk; ++i) {
            if (chunk % 2 == 1 && i % 3 == 0) {
                rows.push_back({2, 30 + j, other[30 + j], false});
                ++j;
            }
            rows.push_back({1, p + i, tokens_[p + i], true});
        }
        if (chunk == 17)
            std::stable_partition(rows.begin(), rows.end(), [](const model::Row& r) { return r.stream == 1; });
        std::vector<float> logits;
        backend_->forward(rows, logits);
        ours.insert(ours.end(), logits.begin(), logits.end());
        backend_->truncate(2, 30);  // stream 2 goes back each round: its rows were drafts
        p += chunk;
    }
    EXPECT_TRUE(bitwise_equal(ours, prefill_));
}

TEST_F(MambaBackend, ThreadCountsAndSimdPathsGiveTheSameBits) {
    for (int threads : {1, 3}) {
        auto other = backend(threads);
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*other, 0, tokens_, {7, 64, 9}), prefill_)) << threads << " threads";
    }
    for (Isa isa : testing::runnable_isas(kernels::Activations::f32)) {
        auto other = backend(2, isa);
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*other, 0, tokens_, {kTokens}), prefill_)) << kernels::isa_name(isa);
    }
}

// A verify round at position 40: the true next token, then drafts of which
// the first `right` are the sequence's own tokens and the rest are wrong.
// After truncating to what landed, the next rounds see the same bits as
// the plain prefill.
TEST_F(MambaBackend, ARoundWhoseDraftsWereAllPartlyOrNotAtAllRejectedLeavesTheExactState) {
    constexpr int32_t kAt = 40, kDrafts = 8;
    for (int32_t right : {0, 3, kDrafts}) {
        const model::StreamId s = 10 + right;
        backend_->open_stream(s, kTokens);
        run(s, 0, slice(0, kAt));
        std::vector<int32_t> round = slice(kAt, 1 + kDrafts);
        for (int32_t i = 1 + right; i <= kDrafts; ++i) round[i] = (round[i] + 1 + i) % vocab_;
        const std::vector<float> verified = run(s, kAt, round);
        // The rows up to the first wrong draft are the sequence's own: their logits are the prefill's.
        const std::vector<float> kept(verified.begin(), verified.begin() + static_cast<ptrdiff_t>(1 + right) * vocab_);
        EXPECT_TRUE(bitwise_equal(kept, prefill_rows(kAt, 1 + right))) << right << " right";
        backend_->truncate(s, kAt + 1 + right);
        EXPECT_EQ(backend_->stream_length(s), kAt + 1 + right);
        const int32_t next = kAt + 1 + right;
        EXPECT_TRUE(bitwise_equal(run(s, next, slice(next, kTokens - next)), prefill_rows(next, kTokens - next)))
            << right << " right";
    }
}

TEST_F(MambaBackend, TruncatingTwiceInsideOneRoundReplaysFromTheRoundsStart) {
    backend_->open_stream(5, kTokens);
    run(5, 0, slice(0, 30));
    run(5, 30, slice(30, 20));
    backend_->truncate(5, 45);
    backend_->truncate(5, 33);
    EXPECT_TRUE(bitwise_equal(run(5, 33, slice(33, 10)), prefill_rows(33, 10)));
}

TEST_F(MambaBackend, OnlyLengthsWhereTheStateIsHeldCanBeReached) {
    backend_->open_stream(6, kTokens);
    run(6, 0, slice(0, 30));
    run(6, 30, slice(30, 10));
    EXPECT_TRUE(backend_->holds_state_at(6, 40));
    EXPECT_TRUE(backend_->holds_state_at(6, 30));  // the last round's start
    EXPECT_FALSE(backend_->holds_state_at(6, 29));
    EXPECT_FALSE(backend_->holds_state_at(6, 41));
    EXPECT_THROW(backend_->truncate(6, 20), std::invalid_argument);
    backend_->open_stream(7, kTokens);
    EXPECT_THROW(backend_->copy_prefix(6, 7, 20), std::invalid_argument);
    // The refusals changed nothing.
    EXPECT_EQ(backend_->stream_length(6), 40);
    EXPECT_TRUE(bitwise_equal(run(6, 40, slice(40, 5)), prefill_rows(40, 5)));
}

TEST_F(MambaBackend, ASnapshotKeptOnRequestResumesACopyExactly) {
    // The prompt cache's case: the state at 24 is asked for before the
    // stream runs past it in one prefill, then another stream resumes there.
    backend_->open_stream(8, kTokens);
    backend_->keep_state_at(8, 24);
    run(8, 0, slice(0, 50));
    run(8, 50, slice(50, 3));
    EXPECT_TRUE(backend_->holds_state_at(8, 24));
    EXPECT_FALSE(backend_->holds_state_at(8, 25));
    backend_->open_stream(9, kTokens);
    backend_->copy_prefix(8, 9, 24);
    EXPECT_EQ(backend_->stream_length(9), 24);
    EXPECT_TRUE(bitwise_equal(run(9, 24, slice(24, 20)), prefill_rows(24, 20)));
    // Truncating the source back to its snapshot works the same way.
    backend_->truncate(8, 24);
    EXPECT_TRUE(bitwise_equal(run(8, 24, slice(24, 8)), prefill_rows(24, 8)));
}

TEST_F(MambaBackend, AMoveOfARecurrentStreamCopiesAndKeepsTheSource) {
    // Its state is held at a few lengths only, so the KV is not handed over.
    backend_->open_stream(16, kTokens);
    backend_->keep_state_at(16, 24);
    run(16, 0, slice(0, 30));
    backend_->open_stream(17, kTokens);
    EXPECT_FALSE(backend_->move_prefix(16, 17, 24));
    EXPECT_EQ(backend_->stream_length(16), 30);
    EXPECT_TRUE(bitwise_equal(run(17, 24, slice(24, 8)), prefill_rows(24, 8)));
    EXPECT_TRUE(bitwise_equal(run(16, 30, slice(30, 4)), prefill_rows(30, 4)));
}

TEST_F(MambaBackend, KeepingTheStateAtTheCurrentLengthSnapshotsItAtOnce) {
    // A regenerated prompt resumes from the cache at exactly this point and
    // asks for it again: the state is there to keep.
    backend_->open_stream(14, kTokens);
    run(14, 0, slice(0, 24));
    backend_->keep_state_at(14, 24);
    run(14, 24, slice(24, 10));
    run(14, 34, slice(34, 2));
    EXPECT_TRUE(backend_->holds_state_at(14, 24));
    backend_->open_stream(15, kTokens);
    backend_->copy_prefix(14, 15, 24);
    EXPECT_TRUE(bitwise_equal(run(15, 24, slice(24, 12)), prefill_rows(24, 12)));
}

TEST_F(MambaBackend, ACopyInsideTheSourcesRoundAndAtItsWholeLengthContinueExactly) {
    backend_->open_stream(11, kTokens);
    run(11, 0, slice(0, 20));
    run(11, 20, slice(20, 12));
    backend_->open_stream(12, kTokens);
    backend_->copy_prefix(11, 12, 26);  // inside the round: replayed into the copy
    EXPECT_TRUE(bitwise_equal(run(12, 26, slice(26, 10)), prefill_rows(26, 10)));
    backend_->open_stream(13, kTokens);
    backend_->copy_prefix(11, 13, 32);  // a graft's fork: the whole stream
    EXPECT_TRUE(bitwise_equal(run(13, 32, slice(32, 10)), prefill_rows(32, 10)));
}

TEST_F(MambaBackend, QuantizedWeightsKeepTheInvariance) {
    WeightOptions options;
    options.quantize = model::QuantType::q8_0;
    auto quantized = load_cpu_backend(dir_->str(), 2, testing::fastest_isa(kernels::Activations::f32),
                                      kernels::Activations::f32, options);
    const std::vector<float> whole = logits_in_chunks(*quantized, 0, tokens_, {kTokens});
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*quantized, 1, tokens_, {1}), whole));
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*quantized, 2, tokens_, {3, 64, 13}), whole));
}

}  // namespace
}  // namespace tf::cpu
