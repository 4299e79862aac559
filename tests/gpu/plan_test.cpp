// The CUDA backend's host-side planning, on the CPU: KV pool sizing, block
// ownership (grow, free, copy_prefix, "KV cache full" before any change),
// row checks, chunks, graph buckets and the packed per-row device inputs.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/forward_plan.h"
#include "gpu/kv_blocks.h"
#include "model/model_config.h"

namespace tf::gpu {
namespace {

using model::Row;
using model::SamplingParams;

constexpr size_t kGiB = size_t{1} << 30;

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

KvPlanInput h200_like() {
    KvPlanInput in;
    in.device_total_bytes = 140 * kGiB;
    in.device_free_bytes = 139 * kGiB;
    in.memory_fraction = 0.9;
    in.weight_bytes = 16 * kGiB;
    in.scratch_bytes = 1 * kGiB;
    in.kv_bytes_per_position = 36 * 2 * 8 * 128 * 2;  // Qwen3-8B: 144 KiB
    in.reserve_bytes = 256 << 20;
    return in;
}

TEST(GpuKvPlan, PoolIsWhatTheFractionLeavesInWholeBlocks) {
    const KvPlanInput in = h200_like();
    const KvPlan plan = plan_kv(in);
    const auto budget = static_cast<size_t>(140.0 * 0.9 * kGiB);
    const size_t block = in.kv_bytes_per_position * kBlockPositions;
    EXPECT_EQ(plan.blocks, static_cast<int64_t>((budget - 17 * kGiB) / block));
    EXPECT_EQ(plan.tokens, plan.blocks * kBlockPositions);
    EXPECT_EQ(plan.kv_bytes, static_cast<size_t>(plan.blocks) * block);
    EXPECT_LE(plan.kv_bytes + in.weight_bytes + in.scratch_bytes, budget);
}

TEST(GpuKvPlan, NeverMoreThanIsFreeNorThanTheCap) {
    KvPlanInput in = h200_like();
    in.device_free_bytes = 40 * kGiB;  // another process holds the rest
    const size_t block = in.kv_bytes_per_position * kBlockPositions;
    EXPECT_EQ(plan_kv(in).blocks, static_cast<int64_t>((40 * kGiB - 17 * kGiB - in.reserve_bytes) / block));
    in.max_tokens = 1000;
    EXPECT_EQ(plan_kv(in).tokens, 1008);  // rounded up to whole blocks
}

TEST(GpuKvPlan, WeightsThatDoNotFitSaySo) {
    KvPlanInput in = h200_like();
    in.weight_bytes = 130 * kGiB;
    const std::string e = error_of([&] { plan_kv(in); });
    EXPECT_NE(e.find("weights need 130.00 GiB"), std::string::npos) << e;
    EXPECT_NE(e.find("126.00 GiB"), std::string::npos) << e;
    in.weight_bytes = 125 * kGiB;  // fits, but scratch leaves no block
    const std::string e2 = error_of([&] { plan_kv(in); });
    EXPECT_NE(e2.find("no room for the KV cache"), std::string::npos) << e2;
    in.memory_fraction = 0;
    EXPECT_THROW(plan_kv(in), std::invalid_argument);
}

// What the backend would plan for Qwen3-8B (bf16, untied lm_head) on an
// H200 (143,771 MiB as the driver counts it) at the default 0.9 fraction and
// 512 rows: the scratch stays well under a GiB (the logits of 512 rows are
// half of it) and the pool holds over 750,000 positions, 18 whole 40,960-token contexts.
TEST(GpuKvPlan, Qwen3_8bOnAnH200) {
    model::ModelConfig c;
    c.hidden_size = 4096;
    c.num_layers = 36;
    c.num_heads = 32;
    c.num_kv_heads = 8;
    c.head_dim = 128;
    c.intermediate_size = 12288;
    c.vocab_size = 151936;
    c.max_position_embeddings = 40960;
    const ScratchPlan scratch = plan_scratch(c, 512);
    EXPECT_EQ(scratch.rows, 512);
    EXPECT_EQ(scratch.split_budget, 512 * 8);  // 8 splits a row; the last position needs 160
    EXPECT_EQ(scratch.logits, size_t{512} * 151936 * 4);
    EXPECT_EQ(scratch.partial_acc, size_t{4096} * 32 * 128 * 4);
    EXPECT_GT(scratch.total(), size_t{550} << 20);  // 590 MiB
    EXPECT_LT(scratch.total(), size_t{650} << 20);
    EXPECT_EQ(plan_scratch(c, 1).rows, kMaxGraphRows);  // a graph bucket's padding rows need room

    const int64_t layer_params = 4096LL * (4096 + 2 * 1024) + 4096LL * 4096 + 3LL * 12288 * 4096;
    const int64_t params = 2LL * 151936 * 4096 + 36 * layer_params;
    KvPlanInput in;
    in.device_total_bytes = size_t{143771} << 20;
    in.device_free_bytes = in.device_total_bytes - (size_t{600} << 20);  // the CUDA context's share
    in.memory_fraction = 0.9;
    in.weight_bytes = static_cast<size_t>(params) * 2;
    in.scratch_bytes = scratch.total();
    in.kv_bytes_per_position = static_cast<size_t>(c.num_layers) * 2 * c.num_kv_heads * c.head_dim * 2;
    in.reserve_bytes = size_t{256} << 20;
    EXPECT_NEAR(static_cast<double>(in.weight_bytes) / 1e9, 16.38, 0.01);
    EXPECT_EQ(in.kv_bytes_per_position, size_t{144} << 10);
    const KvPlan plan = plan_kv(in);
    const auto budget = static_cast<size_t>(static_cast<double>(in.device_total_bytes) * 0.9);
    const size_t block = in.kv_bytes_per_position * kBlockPositions;
    EXPECT_EQ(plan.blocks, static_cast<int64_t>((budget - in.weight_bytes - in.scratch_bytes) / block));
    EXPECT_GT(plan.tokens, 750000);
    EXPECT_GE(plan.tokens / c.max_position_embeddings, 18);
}

TEST(GpuKvBlocks, StreamsGrowOnReserveAndGiveBlocksBack) {
    KvBlocks kv(10);
    kv.open(1, 100);
    kv.open(2, 40);
    EXPECT_EQ(kv.length(1), 0);
    kv.reserve({{1, 17}, {2, 16}});
    EXPECT_EQ(kv.blocks(1), (std::vector<int32_t>{0, 1}));  // lowest ids first
    EXPECT_EQ(kv.blocks(2), (std::vector<int32_t>{2}));
    EXPECT_EQ(kv.free_blocks(), 7);
    kv.set_length(1, 17);
    kv.set_length(2, 16);
    EXPECT_EQ(kv.length(1), 17);
    kv.reserve({{1, 32}});  // still two blocks
    EXPECT_EQ(kv.free_blocks(), 7);
    kv.truncate(1, 16);
    EXPECT_EQ(kv.blocks(1), (std::vector<int32_t>{0}));
    EXPECT_EQ(kv.free_blocks(), 8);
    kv.close(2);
    EXPECT_EQ(kv.free_blocks(), 9);
    EXPECT_FALSE(kv.is_open(2));
    kv.truncate(1, 0);
    EXPECT_TRUE(kv.blocks(1).empty());
    EXPECT_EQ(kv.free_blocks(), 10);
}

TEST(GpuKvBlocks, MisuseGetsTheCpuBackendsErrors) {
    KvBlocks kv(4);
    kv.open(1, 10);
    EXPECT_EQ(error_of([&] { kv.open(1, 10); }), "stream 1 is already open");
    EXPECT_EQ(error_of([&] { kv.open(2, 0); }), "stream capacity must be positive, got 0");
    EXPECT_EQ(error_of([&] { kv.length(3); }), "stream 3 is not open");
    EXPECT_EQ(error_of([&] { kv.truncate(1, 1); }), "truncate stream 1 to 1: it holds 0 positions");
    EXPECT_NE(error_of([&] { kv.open(5, 65); }).find("exceeds the KV cache (64 positions)"), std::string::npos);
    EXPECT_NE(error_of([&] { kv.reserve({{1, 11}}); }).find("stream 1 is full (capacity 10)"), std::string::npos);
}

TEST(GpuKvBlocks, FullPoolThrowsBeforeAnyStreamChanges) {
    KvBlocks kv(4);
    kv.open(1, 64);
    kv.open(2, 64);
    kv.reserve({{1, 40}});  // 3 blocks
    kv.set_length(1, 40);
    const std::string e = error_of([&] { kv.reserve({{1, 48}, {2, 20}}); });  // needs 0 + 2, 1 free
    EXPECT_EQ(e, "KV cache full: this forward needs 2 more blocks of 16 positions, 1 of 4 are free");
    EXPECT_EQ(kv.blocks(1).size(), 3u);
    EXPECT_TRUE(kv.blocks(2).empty());
    EXPECT_EQ(kv.free_blocks(), 1);
    kv.truncate(1, 16);
    kv.reserve({{2, 20}});
    EXPECT_EQ(kv.blocks(2).size(), 2u);
}

TEST(GpuKvBlocks, CopyPrefixPairsBlocksIncludingAPartialLastOne) {
    KvBlocks kv(10);
    kv.open(1, 100);
    kv.open(2, 100);
    kv.reserve({{1, 40}});
    kv.set_length(1, 40);  // blocks 0, 1, 2
    kv.reserve({{2, 64}});
    kv.set_length(2, 64);  // blocks 3..6
    const auto pairs = kv.copy_prefix(1, 2, 20);
    ASSERT_EQ(pairs.size(), 2u);  // 16 + 4 positions
    EXPECT_EQ(pairs[0], (std::pair<int32_t, int32_t>{0, 3}));
    EXPECT_EQ(pairs[1], (std::pair<int32_t, int32_t>{1, 4}));
    EXPECT_EQ(kv.length(2), 20);
    EXPECT_EQ(kv.blocks(2).size(), 2u);  // blocks 5 and 6 went back
    EXPECT_EQ(kv.free_blocks(), 5);
    EXPECT_TRUE(kv.copy_prefix(1, 2, 0).empty());
    EXPECT_EQ(kv.length(2), 0);
    EXPECT_THROW(kv.copy_prefix(1, 1, 10), std::invalid_argument);
    EXPECT_THROW(kv.copy_prefix(1, 2, 41), std::invalid_argument);
}

TEST(GpuKvBlocks, CopyPrefixIntoAFullPoolChangesNothing) {
    KvBlocks kv(4);
    kv.open(1, 64);
    kv.open(2, 64);
    kv.reserve({{1, 48}});
    kv.set_length(1, 48);
    const std::string e = error_of([&] { kv.copy_prefix(1, 2, 33); });
    EXPECT_NE(e.find("KV cache full"), std::string::npos) << e;
    EXPECT_TRUE(kv.blocks(2).empty());
    EXPECT_EQ(kv.free_blocks(), 1);
}

TEST(GpuGraphs, BucketsArePowersOfTwoUpTo64) {
    EXPECT_EQ(graph_bucket(0), 0);
    EXPECT_EQ(graph_bucket(1), 1);
    EXPECT_EQ(graph_bucket(2), 2);
    EXPECT_EQ(graph_bucket(3), 4);
    EXPECT_EQ(graph_bucket(9), 16);
    EXPECT_EQ(graph_bucket(33), 64);
    EXPECT_EQ(graph_bucket(64), 64);
    EXPECT_EQ(graph_bucket(65), 0);
    EXPECT_EQ(split_workers(0), 1);
    EXPECT_EQ(split_workers(1), 1);
    EXPECT_EQ(split_workers(3), 4);
    EXPECT_EQ(split_workers(16), 16);
    EXPECT_EQ(split_workers(500), kMaxSplitWorkers);
}

TEST(GpuSplits, KeyRangesAndSplitsFollowTheRowsOwnPosition) {
    EXPECT_EQ(first_key(10, 0), 0);
    EXPECT_EQ(first_key(10, 8), 3);
    EXPECT_EQ(first_key(3, 8), 0);
    EXPECT_EQ(row_splits(0, 0), 1);
    EXPECT_EQ(row_splits(255, 0), 1);
    EXPECT_EQ(row_splits(256, 0), 2);
    EXPECT_EQ(row_splits(1000, 0), 4);
    EXPECT_EQ(row_splits(1000, 100), 1);  // keys 901..1000, within split 3
    EXPECT_EQ(row_splits(780, 100), 2);   // keys 681..780: splits 2 and 3
}

TEST(GpuRows, CheckRowsEnforcesTheContractWithTheCpuTexts) {
    KvBlocks kv(100);
    kv.open(1, 8);
    kv.open(2, 8);
    kv.reserve({{1, 2}});
    kv.set_length(1, 2);
    const std::vector<Row> good = {{1, 2, 5}, {2, 0, 6, true, 0}, {1, 3, 7}, {2, 1, 8}};
    const auto lengths = check_rows(good, 1, 100, kv);
    EXPECT_EQ(lengths, (std::vector<std::pair<int32_t, int32_t>>{{1, 4}, {2, 2}}));
    auto error = [&](std::vector<Row> rows, size_t samplers = 0) {
        return error_of([&] { check_rows(rows, samplers, 100, kv); });
    };
    EXPECT_EQ(error({{3, 0, 1}}), "stream 3 is not open");
    EXPECT_EQ(error({{1, 3, 1}}), "row of stream 1 has position 3, expected 2");
    EXPECT_EQ(error({{2, 0, 1}, {2, 2, 1}}), "row of stream 2 has position 2, expected 1");
    EXPECT_EQ(error({{2, 0, 100}}), "token 100 is outside the vocabulary");
    EXPECT_EQ(error({{2, 0, -1}}), "token -1 is outside the vocabulary");
    EXPECT_EQ(error({{2, 0, 1, false, 1}}, 1), "row of stream 2 names sampler 1 of 1");
    std::vector<Row> too_many;
    for (int32_t p = 0; p < 9; ++p) too_many.push_back({2, p, 1});
    EXPECT_EQ(error(too_many), "stream 2 is full (capacity 8)");
}

TEST(GpuRows, ChunksHoldAtMostMaxRowsAndTheSplitBudget) {
    std::vector<Row> rows;
    for (int32_t p = 0; p < 1000; ++p) rows.push_back({1, p, 1});
    EXPECT_EQ(plan_chunks(rows, 512, 1 << 20, 0), (std::vector<std::pair<size_t, size_t>>{{0, 512}, {512, 1000}}));
    // Rows 0..255 need 1 split each, 256..511 two, 512..767 three.
    const auto chunks = plan_chunks(std::span(rows).first(700), 1000, 400, 0);
    EXPECT_EQ(chunks, (std::vector<std::pair<size_t, size_t>>{
                          {0, 328},     // 256 + 72 * 2 = 400
                          {328, 522},   // 184 * 2 + 10 * 3 = 398
                          {522, 655},   // 133 * 3 = 399
                          {655, 700}}));
    EXPECT_TRUE(plan_chunks({}, 8, 8, 0).empty());
    // A row needing more than the budget still gets a chunk of its own.
    EXPECT_EQ(plan_chunks(std::span(rows).subspan(900, 2), 8, 2, 0),
              (std::vector<std::pair<size_t, size_t>>{{0, 1}, {1, 2}}));
}

TEST(GpuRows, PackingWithoutABucketKeepsOnlyOutputRows) {
    KvBlocks kv(100);
    kv.open(7, 600);
    kv.open(9, 600);
    kv.reserve({{7, 16}});
    kv.set_length(7, 16);
    kv.reserve({{7, 300}, {9, 2}});
    const std::vector<SamplingParams> samplers = {{.temperature = 0.5f, .top_k = 3, .top_p = 0.9f, .min_p = 0.1f, .seed = 11}};
    const std::vector<Row> rows = {{7, 298, 5, true}, {9, 0, 6, false, -1}, {7, 299, 8, false, 0}, {9, 1, 4, true, 0}};
    const ChunkInputs in = pack_chunk(rows, samplers, kv, 0, 0);
    ASSERT_EQ(in.rows.size(), 4u);
    const std::vector<int32_t>& t7 = kv.blocks(7);
    ASSERT_EQ(t7.size(), 19u);
    EXPECT_EQ(in.tables.size(), 19u + 1u);
    EXPECT_EQ(in.tables[0], t7[0]);
    EXPECT_EQ(in.tables[19], kv.blocks(9)[0]);
    EXPECT_EQ(in.rows[0].table_offset, 0);
    EXPECT_EQ(in.rows[1].table_offset, 19);
    EXPECT_EQ(in.rows[2].table_offset, 0);
    EXPECT_EQ(in.rows[3].table_offset, 19);
    EXPECT_EQ(in.rows[0].token, 5);
    EXPECT_EQ(in.rows[0].position, 298);
    EXPECT_EQ(in.rows[0].first, 0);
    EXPECT_EQ(in.rows[0].split_begin, 0);
    EXPECT_EQ(in.rows[0].split_count, 2);
    EXPECT_EQ(in.rows[0].partial_base, 0);
    EXPECT_EQ(in.rows[1].partial_base, 2);
    EXPECT_EQ(in.rows[2].partial_base, 3);
    EXPECT_EQ(in.rows[3].partial_base, 5);
    EXPECT_EQ(in.total_splits, 6);
    EXPECT_EQ(in.max_splits, 2);
    for (const DeviceRow& r : in.rows) EXPECT_EQ(r.valid, 1);
    // Outputs: rows 0 (logits), 2 (token), 3 (both); row 1 neither.
    EXPECT_EQ(in.out_rows, (std::vector<int32_t>{0, 2, 3}));
    EXPECT_EQ(in.token_outputs, (std::vector<int32_t>{1, 2}));
    EXPECT_EQ(in.logits_outputs, (std::vector<int32_t>{0, 2}));
    ASSERT_EQ(in.samplers.size(), 3u);
    EXPECT_EQ(in.samplers[0].active, 0);
    EXPECT_EQ(in.samplers[1].active, 1);
    EXPECT_EQ(in.samplers[1].position, 300);
    EXPECT_EQ(in.samplers[1].top_k, 3);
    EXPECT_FLOAT_EQ(in.samplers[1].top_p, 0.9f);
    EXPECT_FLOAT_EQ(in.samplers[1].min_p, 0.1f);
    EXPECT_FLOAT_EQ(in.samplers[1].temperature, 0.5f);
    EXPECT_EQ(in.samplers[1].seed, 11u);
    EXPECT_EQ(in.samplers[2].position, 2);
}

TEST(GpuRows, PackingForABucketPadsWithInertRows) {
    KvBlocks kv(100);
    kv.open(1, 600);
    kv.reserve({{1, 3}});
    const std::vector<Row> rows = {{1, 0, 5}, {1, 1, 6, false, 0}, {1, 2, 7, true}};
    const std::vector<SamplingParams> samplers = {{.temperature = 0.0f}};
    const ChunkInputs in = pack_chunk(rows, samplers, kv, 8, 4);
    ASSERT_EQ(in.rows.size(), 4u);
    EXPECT_EQ(in.rows[3].valid, 0);
    EXPECT_EQ(in.rows[3].split_count, 0);
    EXPECT_EQ(in.rows[3].token, 0);
    EXPECT_EQ(in.out_rows, (std::vector<int32_t>{0, 1, 2, 3}));  // every row, so the graph's shapes are fixed
    EXPECT_EQ(in.token_outputs, (std::vector<int32_t>{1}));
    EXPECT_EQ(in.logits_outputs, (std::vector<int32_t>{2}));
    EXPECT_EQ(in.samplers[0].active, 0);
    EXPECT_EQ(in.samplers[1].active, 1);
    EXPECT_EQ(in.samplers[3].active, 0);
    EXPECT_THROW(pack_chunk(rows, samplers, kv, 8, 2), std::logic_error);
    // Sliding window: first key and splits follow it.
    kv.reserve({{1, 400}});
    const std::vector<Row> late = {{1, 399, 1}};
    const ChunkInputs w = pack_chunk(late, samplers, kv, 200, 1);
    EXPECT_EQ(w.rows[0].first, 200);
    EXPECT_EQ(w.rows[0].split_begin, 0);
    EXPECT_EQ(w.rows[0].split_count, 2);
}

}  // namespace
}  // namespace tf::gpu
