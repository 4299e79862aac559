// Batch invariance, bitwise (DESIGN.md section 4): on the real tinycode
// weights, the logits of every token of a random sequence are the same bits
// whether computed in one prefill, one token at a time, as verify rows of
// 2..64 tokens, mixed in a batch with other streams at other positions, with
// 1, 2 or 3 threads, and on the scalar, AVX2 and AVX-512 paths; and the
// same with bf16 activations on every path that computes with them.
#include <gtest/gtest.h>

#include "cpu/cpu_backend.h"
#include "tests/cpu/kernel_test_support.h"
#include "tests/model/test_support.h"

namespace tf::cpu {
namespace {

using kernels::Isa;
using testing::bitwise_equal;
using testing::logits_in_chunks;
using testing::random_tokens;
using testing::tinycode_dir;

constexpr int32_t kTokens = 72;  // room for a 64-row verify chunk after a prefix

// f32 activations: the fastest path that computes with them (on a CPU with
// AVX512_BF16 the automatic choice would be bf16, tested on its own below).
std::unique_ptr<CpuBackend> tinycode(int threads, Isa isa = testing::fastest_isa(kernels::Activations::f32)) {
    return load_cpu_backend(tinycode_dir(), threads, isa);
}

class BatchInvariance : public ::testing::Test {
protected:
    void SetUp() override {
        backend_ = tinycode(2);
        tokens_ = random_tokens(kTokens, backend_->config().vocab_size, 42);
        prefill_ = logits_in_chunks(*backend_, 0, tokens_, {kTokens});
    }
    std::unique_ptr<CpuBackend> backend_;
    std::vector<int32_t> tokens_;
    std::vector<float> prefill_;
};

TEST_F(BatchInvariance, OneTokenAtATimeEqualsOnePrefill) {
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend_, 1, tokens_, {1}), prefill_));
}

TEST_F(BatchInvariance, VerifyChunksOf2To64EqualOnePrefill) {
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend_, 1, tokens_, {2, 3, 5, 8, 13, 4, 7, 16, 9, 5}), prefill_));
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend_, 2, tokens_, {1, 64, 7}), prefill_));
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend_, 3, tokens_, {32, 33, 7}), prefill_));
}

TEST_F(BatchInvariance, RowsMixedWithOtherStreamsAtOtherPositionsEqualOnePrefill) {
    // Streams 1 and 2 run their own sequences at other positions in the same
    // forward passes; stream 0's rows sit first, last or between them.
    const auto other = random_tokens(kTokens + 40, backend_->config().vocab_size, 7);
    backend_->open_stream(0, kTokens);
    backend_->open_stream(1, kTokens + 40);
    backend_->open_stream(2, kTokens + 40);
    std::vector<model::Row> warm;
    for (int32_t i = 0; i < 30; ++i) warm.push_back({1, i, other[i], false});
    std::vector<float> logits;
    backend_->forward(warm, logits);

    const size_t vocab = static_cast<size_t>(backend_->config().vocab_size);
    std::vector<float> mixed(prefill_.size());
    int32_t at = 0, other_1 = 30, other_2 = 0, round = 0;
    const int32_t chunks[] = {3, 1, 9, 2, 17, 5, 1, 12, 6, 16};
    while (at < kTokens) {
        const int32_t n = std::min(chunks[round % 10], kTokens - at);
        std::vector<model::Row> rows;
        std::vector<size_t> ours;  // indices in `rows` of stream 0's rows
        auto add_others = [&](int32_t count) {
            for (int32_t i = 0; i < count; ++i) rows.push_back({1, other_1, other[other_1], i % 2 == 0}), ++other_1;
            rows.push_back({2, other_2, other[other_2 + 3], true}), ++other_2;
        };
        if (round % 3 == 1) add_others(1 + round % 3);
        for (int32_t i = 0; i < n; ++i) {
            ours.push_back(rows.size());
            rows.push_back({0, at + i, tokens_[at + i], true});
            if (round % 3 == 2 && i == 0) add_others(2);  // other streams between stream 0's rows
        }
        if (round % 3 == 0) add_others(1);
        backend_->forward(rows, logits);
        // Logits come in row order for the rows that asked.
        size_t logits_row = 0;
        for (size_t r = 0, k = 0; r < rows.size(); ++r) {
            if (!rows[r].want_logits) continue;
            if (k < ours.size() && ours[k] == r) {
                std::copy_n(logits.begin() + logits_row * vocab, vocab, mixed.begin() + (at + k) * vocab);
                ++k;
            }
            ++logits_row;
        }
        at += n;
        ++round;
    }
    EXPECT_TRUE(bitwise_equal(mixed, prefill_));
}

TEST_F(BatchInvariance, OneTwoAndThreeThreadsGiveTheSameBits) {
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*tinycode(1), 0, tokens_, {kTokens}), prefill_));
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*tinycode(3), 0, tokens_, {5, 64, 3}), prefill_));
}

TEST_F(BatchInvariance, Avx2AndAvx512PathsGiveTheSameBits) {
    // Identical by construction: one 16-lane layout, FMA in both, one tree.
    for (Isa isa : {Isa::avx2, Isa::avx512}) {
        if (!kernels::isa_supported(isa)) continue;
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*tinycode(2, isa), 0, tokens_, {kTokens}), prefill_))
            << kernels::isa_name(isa);
    }
}

// With bf16 activations the emulating paths and, where it runs, the
// VDPBF16PS path give one set of bits, and a row's logits still do not
// depend on its batch, its place in it or the thread count.
TEST_F(BatchInvariance, Bf16ActivationsAreBatchInvariantAndTheSameOnEveryPath) {
    using kernels::Activations;
    const Isa fastest = testing::fastest_isa(Activations::bf16);
    auto bf16 = load_cpu_backend(tinycode_dir(), 2, fastest, Activations::bf16);
    const auto whole = logits_in_chunks(*bf16, 0, tokens_, {kTokens});
    EXPECT_FALSE(bitwise_equal(whole, prefill_));  // the precision really changed
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*bf16, 1, tokens_, {1}), whole));
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*bf16, 2, tokens_, {2, 3, 5, 8, 13, 4, 7, 16, 9, 5}), whole));
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*load_cpu_backend(tinycode_dir(), 1, fastest, Activations::bf16), 0,
                                               tokens_, {1, 64, 7}),
                              whole));
    for (Isa isa : {Isa::avx2, Isa::avx512, Isa::avx512_bf16}) {
        if (isa == fastest || !kernels::isa_supported(isa)) continue;
        EXPECT_TRUE(bitwise_equal(
            logits_in_chunks(*load_cpu_backend(tinycode_dir(), 2, isa, Activations::bf16), 0, tokens_, {kTokens}), whole))
            << kernels::isa_name(isa);
    }
    const std::vector<int32_t> prefix(tokens_.begin(), tokens_.begin() + 6);
    const size_t vocab = static_cast<size_t>(backend_->config().vocab_size);
    EXPECT_TRUE(bitwise_equal(
        logits_in_chunks(*load_cpu_backend(tinycode_dir(), 2, Isa::scalar, Activations::bf16), 0, prefix, {6}),
        std::vector<float>(whole.begin(), whole.begin() + 6 * vocab)));
}

// Every KV cache type: a key is rounded once when its row writes it, so a
// row reads the same bits in a prefill, one at a time, in verify chunks, at
// 1 or 2 threads and on every path.
TEST_F(BatchInvariance, EveryKvTypeIsBatchInvariantAndTheSameOnEveryPath) {
    for (kernels::KvType kv : {kernels::KvType::f32, kernels::KvType::bf16, kernels::KvType::q8_0}) {
        auto load = [&](int threads, Isa isa) {
            return load_cpu_backend(tinycode_dir(), threads, isa, kernels::Activations::f32, {},
                                    kernels::quant_vnni_supported(isa), kv);
        };
        const Isa fastest = testing::fastest_isa(kernels::Activations::f32);
        const std::vector<float> whole = logits_in_chunks(*load(2, fastest), 0, tokens_, {kTokens});
        EXPECT_FALSE(bitwise_equal(whole, prefill_)) << kernels::kv_type_name(kv) << " reads what f16 reads";
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*load(1, fastest), 0, tokens_, {1}), whole))
            << kernels::kv_type_name(kv);
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*load(2, fastest), 0, tokens_, {5, 16, 3, 40, 8}), whole))
            << kernels::kv_type_name(kv);
        for (Isa isa : testing::runnable_isas()) {
            if (isa == Isa::avx512_bf16 || isa == fastest) continue;  // f32 activations only
            EXPECT_TRUE(bitwise_equal(logits_in_chunks(*load(2, isa), 0, tokens_, {9, 64}), whole))
                << kernels::kv_type_name(kv) << " on " << kernels::isa_name(isa);
        }
    }
}

TEST_F(BatchInvariance, ScalarPathGivesTheSameBits) {
    // The scalar path is slow (std::fma per lane): a prefix of the sequence.
    const std::vector<int32_t> prefix(tokens_.begin(), tokens_.begin() + 12);
    const size_t vocab = static_cast<size_t>(backend_->config().vocab_size);
    const std::vector<float> expected(prefill_.begin(), prefill_.begin() + 12 * vocab);
    EXPECT_TRUE(bitwise_equal(logits_in_chunks(*tinycode(2, Isa::scalar), 0, prefix, {12}), expected));
}

TEST_F(BatchInvariance, TruncatedDraftsRecomputeToTheSameBits) {
    // Verify 10 drafts, reject the last 6, then decode other tokens there
    // and bring back the same ones: the cache holds exactly what it should.
    const size_t vocab = static_cast<size_t>(backend_->config().vocab_size);
    backend_->open_stream(5, kTokens);
    std::vector<model::Row> rows;
    std::vector<float> logits;
    for (int32_t i = 0; i < 40; ++i) rows.push_back({5, i, tokens_[i], false});
    backend_->forward(rows, logits);
    backend_->truncate(5, 34);
    EXPECT_EQ(backend_->stream_length(5), 34);
    rows.clear();
    for (int32_t i = 34; i < 44; ++i) rows.push_back({5, i, (tokens_[i] + 1) % 8192, true});  // wrong drafts
    backend_->forward(rows, logits);
    backend_->truncate(5, 34);
    rows.clear();
    for (int32_t i = 34; i < kTokens; ++i) rows.push_back({5, i, tokens_[i], true});
    backend_->forward(rows, logits);
    EXPECT_TRUE(bitwise_equal(logits, std::vector<float>(prefill_.begin() + 34 * vocab, prefill_.end())));
}

TEST_F(BatchInvariance, CopiedPrefixContinuesWithTheSameBits) {
    const size_t vocab = static_cast<size_t>(backend_->config().vocab_size);
    backend_->open_stream(6, kTokens);
    backend_->open_stream(7, kTokens);
    std::vector<model::Row> rows;
    std::vector<float> logits;
    for (int32_t i = 0; i < 50; ++i) rows.push_back({6, i, tokens_[i], false});
    backend_->forward(rows, logits);
    backend_->copy_prefix(6, 7, 25);
    EXPECT_EQ(backend_->stream_length(7), 25);
    rows.clear();
    for (int32_t i = 25; i < kTokens; ++i) rows.push_back({7, i, tokens_[i], true});
    backend_->forward(rows, logits);
    EXPECT_TRUE(bitwise_equal(logits, std::vector<float>(prefill_.begin() + 25 * vocab, prefill_.end())));
}

TEST_F(BatchInvariance, AMovedPrefixContinuesWithTheSameBitsAndEmptiesItsSource) {
    // The prompt cache's takeover: the KV changes hands instead of being copied.
    const size_t vocab = static_cast<size_t>(backend_->config().vocab_size);
    backend_->open_stream(8, kTokens);
    backend_->open_stream(9, kTokens);
    std::vector<model::Row> rows;
    std::vector<float> logits;
    for (int32_t i = 0; i < 50; ++i) rows.push_back({8, i, tokens_[i], false});
    backend_->forward(rows, logits);
    EXPECT_TRUE(backend_->move_prefix(8, 9, 25));
    EXPECT_EQ(backend_->stream_length(9), 25);
    EXPECT_EQ(backend_->stream_length(8), 0);
    rows.clear();
    for (int32_t i = 25; i < kTokens; ++i) rows.push_back({9, i, tokens_[i], true});
    backend_->forward(rows, logits);
    EXPECT_TRUE(bitwise_equal(logits, std::vector<float>(prefill_.begin() + 25 * vocab, prefill_.end())));
    // The emptied source is a usable stream, from position 0.
    rows = {{8, 0, tokens_[0], true}};
    backend_->forward(rows, logits);
    EXPECT_TRUE(bitwise_equal(logits, std::vector<float>(prefill_.begin(), prefill_.begin() + vocab)));
    // Streams of different capacities cannot trade storage: the prefix is copied.
    backend_->open_stream(10, kTokens + 16);
    EXPECT_FALSE(backend_->move_prefix(9, 10, 30));
    EXPECT_EQ(backend_->stream_length(9), kTokens);
    EXPECT_EQ(backend_->stream_length(10), 30);
    EXPECT_THROW(backend_->move_prefix(9, 10, kTokens + 1), std::invalid_argument);
}

}  // namespace
}  // namespace tf::cpu
