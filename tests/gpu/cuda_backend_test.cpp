// The CUDA backend on a device (ctest label gpu; every test skips, saying
// why, when there is none):
//  - batch invariance, bitwise: a row's logits are the same alone (decode),
//    in its stream's prefill, in verify chunks, mixed with other streams in
//    rounds of 1..64+ rows in shuffled order, with graphs or without,
//    through max_rows chunking and from another thread; prompts up to 2,300
//    positions (9 attention splits, 16 workers a row), on tinycode and on a
//    head_dim-128 model whose matmuls end in column tails;
//  - logits near the CPU backend's (bf16 weights, activations into GEMMs
//    and KV cache on the device, so a tolerance) on tinycode and random
//    Llama / Mistral / Qwen2 / Qwen3 checkpoints, f32 and sharded ones too;
//  - copy_prefix, truncate and a full KV pool.
// The oracle and the sampler: oracle_sampler_test.cpp; single kernels:
// kernels_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cpu/cpu_backend.h"
#include "gpu/cuda_backend.h"
#include "model/checkpoint_writer.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/model/test_support.h"

namespace tf::gpu {
namespace {

using model::Backend;
using model::Row;
using model::StreamId;
using model::testing::bitwise_equal;
using model::testing::logits_in_chunks;
using model::testing::random_tokens;
using model::testing::tinycode_dir;
using testing::head_dim_128_spec;
using testing::test_prompts;

// GPU against CPU logits: max |gpu - cpu| over a row, relative to
// max(1, max |cpu|) of that row. The device rounds every GEMM input and
// the KV cache to bf16; the CPU backend's fp32 path does not.
constexpr double kLogitTolerance = 3e-2;

using GpuBackend = testing::GpuTest;

// Per stream: the logits of every position, one row per forward.
std::vector<std::vector<float>> decode_alone(Backend& backend, const std::vector<std::vector<int32_t>>& prompts) {
    std::vector<std::vector<float>> all;
    for (size_t s = 0; s < prompts.size(); ++s) all.push_back(logits_in_chunks(backend, 100 + static_cast<StreamId>(s), prompts[s], {1}));
    return all;
}

// All streams at once, in rounds: each round takes 1..`most` next rows of
// every unfinished stream, streams in a shuffled order.
std::vector<std::vector<float>> mixed_rounds(Backend& backend, const std::vector<std::vector<int32_t>>& prompts, int32_t most,
                                             uint32_t seed) {
    const size_t vocab = static_cast<size_t>(backend.config().vocab_size);
    std::mt19937 rng(seed);
    std::vector<std::vector<float>> all(prompts.size());
    std::vector<size_t> at(prompts.size(), 0);
    for (size_t s = 0; s < prompts.size(); ++s) backend.open_stream(200 + static_cast<StreamId>(s), static_cast<int32_t>(prompts[s].size()));
    for (;;) {
        std::vector<size_t> order;
        for (size_t s = 0; s < prompts.size(); ++s) {
            if (at[s] < prompts[s].size()) order.push_back(s);
        }
        if (order.empty()) break;
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<Row> rows;
        std::vector<size_t> owner;
        for (size_t s : order) {
            const size_t n = std::min<size_t>(prompts[s].size() - at[s], 1 + rng() % static_cast<uint32_t>(most));
            for (size_t i = 0; i < n; ++i) {
                rows.push_back({200 + static_cast<StreamId>(s), static_cast<int32_t>(at[s] + i), prompts[s][at[s] + i], true});
                owner.push_back(s);
            }
            at[s] += n;
        }
        std::vector<float> logits;
        backend.forward(rows, logits);
        EXPECT_EQ(logits.size(), rows.size() * vocab);
        for (size_t r = 0; r < rows.size(); ++r) {
            all[owner[r]].insert(all[owner[r]].end(), logits.begin() + static_cast<std::ptrdiff_t>(r * vocab),
                                 logits.begin() + static_cast<std::ptrdiff_t>((r + 1) * vocab));
        }
    }
    for (size_t s = 0; s < prompts.size(); ++s) backend.close_stream(200 + static_cast<StreamId>(s));
    return all;
}

void expect_batch_invariance(const std::string& dir, int32_t longest) {
    auto backend = GpuBackend::load(dir);
    const auto prompts = test_prompts(backend->config().vocab_size, longest);
    const auto reference = decode_alone(*backend, prompts);

    for (size_t s = 0; s < prompts.size(); ++s) {
        const auto n = static_cast<int32_t>(prompts[s].size());
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend, 1, prompts[s], {n}), reference[s])) << "prefill, stream " << s;
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*backend, 1, prompts[s], {2, 5, 64, 3, 16, 1, 33}), reference[s]))
            << "verify chunks, stream " << s;
    }
    for (int32_t most : {1, 4, 16, 64}) {
        const auto mixed = mixed_rounds(*backend, prompts, most, static_cast<uint32_t>(most));
        for (size_t s = 0; s < prompts.size(); ++s) {
            EXPECT_TRUE(bitwise_equal(mixed[s], reference[s])) << "mixed rounds of up to " << most << " rows, stream " << s;
        }
    }
    // An actor thread other than the loading one runs the forwards.
    std::vector<float> from_thread;
    std::thread([&] { from_thread = logits_in_chunks(*backend, 1, prompts.back(), {7}); }).join();
    EXPECT_TRUE(bitwise_equal(from_thread, reference.back())) << "forwards from another thread";

    // Without graphs, and with forwards cut into chunks of 7 rows.
    auto eager = GpuBackend::load(dir, false);
    auto chunked = GpuBackend::load(dir, true, 7);
    for (size_t s = 0; s < prompts.size(); ++s) {
        const auto n = static_cast<int32_t>(prompts[s].size());
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*eager, 1, prompts[s], {1}), reference[s])) << "no graphs, stream " << s;
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*eager, 1, prompts[s], {n}), reference[s])) << "no graphs, prefill " << s;
        EXPECT_TRUE(bitwise_equal(logits_in_chunks(*chunked, 1, prompts[s], {n}), reference[s])) << "max_rows 7, stream " << s;
    }
    const auto mixed = mixed_rounds(*eager, prompts, 64, 99);
    for (size_t s = 0; s < prompts.size(); ++s) EXPECT_TRUE(bitwise_equal(mixed[s], reference[s])) << "no graphs, mixed, stream " << s;
}

TEST_F(GpuBackend, LogitsAreBitwiseTheSameHoweverRowsAreBatched) {
    SCOPED_TRACE("tinycode");
    expect_batch_invariance(tinycode_dir(), 2300);
}

TEST_F(GpuBackend, LogitsAreBitwiseTheSameHoweverRowsAreBatchedAtHeadDim128WithColumnTails) {
    model::testing::TempDir temp;
    const std::string dir = temp.str() + "/head-dim-128";
    model::write_checkpoint(head_dim_128_spec(), dir);
    expect_batch_invariance(dir, 1100);
}

// The GPU's and the CPU's logits for the same tokens, every position.
double worst_difference(Backend& gpu, Backend& cpu, const std::vector<int32_t>& tokens) {
    const auto a = logits_in_chunks(gpu, 1, tokens, {static_cast<int32_t>(tokens.size())});
    const auto b = logits_in_chunks(cpu, 1, tokens, {static_cast<int32_t>(tokens.size())});
    EXPECT_EQ(a.size(), b.size());
    const size_t vocab = static_cast<size_t>(gpu.config().vocab_size);
    double worst = 0;
    for (size_t r = 0; r * vocab < b.size(); ++r) {
        double scale = 1.0, diff = 0.0;
        for (size_t i = r * vocab; i < (r + 1) * vocab; ++i) {
            scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
            diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
        }
        worst = std::max(worst, diff / scale);
    }
    return worst;
}

TEST_F(GpuBackend, LogitsAreNearTheCpuBackendsOnEveryFamily) {
    struct Case {
        std::string name;
        std::string dir;
        int32_t tokens;
    };
    model::testing::TempDir temp;
    std::vector<Case> cases = {{"tinycode", tinycode_dir(), 300}};
    auto add = [&](const std::string& name, model::CheckpointSpec spec, int32_t tokens) {
        const std::string dir = temp.str() + "/" + name;
        model::write_checkpoint(spec, dir);
        cases.push_back({name, dir, tokens});
    };
    model::CheckpointSpec llama = model::preset_spec("tiny-llama");
    llama.attention_bias = true;
    llama.llama3_rope_scaling = true;
    add("llama-bias-llama3-rope", llama, 80);
    model::CheckpointSpec mistral = model::preset_spec("tiny-mistral");
    add("mistral-window-8", mistral, 80);
    mistral.sliding_window = 260;  // a window across a split boundary
    add("mistral-window-260", mistral, 600);
    add("qwen2", model::preset_spec("tiny-qwen2"), 80);
    add("qwen3", model::preset_spec("tiny-qwen3"), 80);
    add("qwen3-head-dim-128-tails", head_dim_128_spec(), 300);
    model::CheckpointSpec f32 = model::preset_spec("tiny-qwen3");
    f32.dtype = model::DType::f32;
    add("qwen3-f32", f32, 40);
    model::CheckpointSpec sharded = model::preset_spec("tiny-llama");
    sharded.shards = 3;
    add("llama-3-shards", sharded, 40);

    for (const Case& c : cases) {
        auto gpu = GpuBackend::load(c.dir);
        auto cpu = testing::load_cpu_reference(c.dir);
        const double worst = worst_difference(*gpu, *cpu, random_tokens(c.tokens, gpu->config().vocab_size, 3));
        std::printf("%-24s largest |gpu - cpu| / max(1, max |cpu|) over %d positions: %.2e\n", c.name.c_str(), c.tokens, worst);
        EXPECT_LE(worst, kLogitTolerance) << c.name;
    }
}

TEST_F(GpuBackend, CopyPrefixAndTruncateContinueAsAFreshStream) {
    auto backend = load(tinycode_dir());
    const int32_t vocab = backend->config().vocab_size;
    const auto tokens = random_tokens(120, vocab, 21);
    const auto fresh = logits_in_chunks(*backend, 1, tokens, {120});
    const size_t v = static_cast<size_t>(vocab);
    auto tail = [&](size_t from) { return std::vector<float>(fresh.begin() + static_cast<std::ptrdiff_t>(from * v), fresh.end()); };
    auto continue_from = [&](StreamId stream, int32_t from) {
        std::vector<Row> rows;
        for (int32_t p = from; p < 120; ++p) rows.push_back({stream, p, tokens[p], true});
        std::vector<float> logits;
        backend->forward(rows, logits);
        return logits;
    };

    backend->open_stream(2, 200);
    backend->open_stream(3, 200);
    std::vector<Row> rows;
    for (int32_t p = 0; p < 100; ++p) rows.push_back({2, p, tokens[p]});
    std::vector<float> unused;
    backend->forward(rows, unused);
    // Stream 3 first holds something else and longer, then a 37-position copy (a partial block).
    rows.clear();
    for (int32_t p = 0; p < 150; ++p) rows.push_back({3, p, (tokens[p % 120] + 1) % vocab});
    backend->forward(rows, unused);
    backend->copy_prefix(2, 3, 37);
    EXPECT_EQ(backend->stream_length(3), 37);
    EXPECT_TRUE(bitwise_equal(continue_from(3, 37), tail(37)));

    // Truncate: a rejected draft of other tokens leaves no trace.
    backend->truncate(2, 60);
    rows.clear();
    for (int32_t p = 60; p < 90; ++p) rows.push_back({2, p, (tokens[p] + 3) % vocab});
    backend->forward(rows, unused);
    backend->truncate(2, 45);
    EXPECT_EQ(backend->stream_length(2), 45);
    EXPECT_TRUE(bitwise_equal(continue_from(2, 45), tail(45)));
}

TEST_F(GpuBackend, AFullKvCacheIsAClearErrorThatChangesNothing) {
    auto backend = load(tinycode_dir(), true, 512, 64);  // four blocks of 16
    backend->open_stream(1, 64);
    backend->open_stream(2, 64);
    std::vector<Row> rows;
    for (int32_t p = 0; p < 40; ++p) rows.push_back({1, p, p});
    std::vector<float> unused;
    backend->forward(rows, unused);  // three blocks
    rows.clear();
    for (int32_t p = 0; p < 20; ++p) rows.push_back({2, p, p, true});
    try {
        backend->forward(rows, unused);
        FAIL() << "a forward past the pool succeeded";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("KV cache full"), std::string::npos) << e.what();
    }
    EXPECT_EQ(backend->stream_length(1), 40);
    EXPECT_EQ(backend->stream_length(2), 0);
    backend->truncate(1, 16);
    std::vector<float> logits;
    backend->forward(rows, logits);
    EXPECT_EQ(backend->stream_length(2), 20);
    EXPECT_EQ(logits.size(), 20u * static_cast<size_t>(backend->config().vocab_size));
    EXPECT_THROW(backend->open_stream(3, 65), std::invalid_argument);
}

}  // namespace
}  // namespace tf::gpu
