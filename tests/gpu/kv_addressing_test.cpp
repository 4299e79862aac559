// The paged KV cache's addressing, run on the CPU: the real KvBlocks and
// pack_chunk decide blocks, tables and row records; the writes of
// qk_rope_kv, the reads of attention and the block copies of copy_prefix use
// the functions of gpu/kernels/kv_addressing.h that those kernels call. Every
// element written is tagged with the (stream, position, version, layer,
// kv head, dimension) it stands for, and every key a row's attention reads
// must carry the tag of that stream's position as it was last written
// (after truncations, rewrites, sliding windows, prompt-cache copies of
// whole and partial blocks, and graph buckets with padding rows).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "gpu/forward_plan.h"
#include "gpu/kernels/kv_addressing.h"
#include "gpu/kv_blocks.h"

namespace tf::gpu::kernels {
namespace {

using model::Row;

constexpr int32_t kLayers = 2, kHeads = 4, kKvHeads = 2, kHeadDim = 8;
constexpr int64_t kPoolBlocks = 260;

uint64_t tag(int32_t origin, int32_t version, int32_t position, int32_t layer, int32_t kv_head, int32_t d) {
    // 8 bits of stream, 16 of version, 24 of position, 4 of layer, 4 of kv head, 8 of dimension.
    return (uint64_t(origin) << 56) | (uint64_t(version) << 40) | (uint64_t(position) << 16) | (uint64_t(layer) << 12) |
           (uint64_t(kv_head) << 8) | uint64_t(d);
}

class KvEmulator {
public:
    explicit KvEmulator(int32_t window) : window_(window), kv_(kPoolBlocks) {
        shape_.heads = kHeads;
        shape_.kv_heads = kKvHeads;
        shape_.head_dim = kHeadDim;
        shape_.num_blocks = kPoolBlocks;
        pool_.assign(static_cast<size_t>(kLayers * kPoolBlocks * shape_.block_elems()), 0);
    }

    KvBlocks& kv() { return kv_; }
    int64_t reads() const { return reads_; }

    void open(int32_t stream, int32_t capacity) {
        kv_.open(stream, capacity);
        written_[stream].clear();
    }

    // Appends `counts[s]` rows to stream streams[s], all in one forward,
    // cut into chunks as the backend cuts them; each chunk packed with a
    // graph bucket or without, as `use_buckets` says.
    void forward(const std::vector<std::pair<int32_t, int32_t>>& appends, bool use_buckets, int32_t max_rows) {
        std::vector<Row> rows;
        for (const auto& [stream, count] : appends) {
            for (int32_t i = 0; i < count; ++i) rows.push_back({stream, kv_.length(stream) + i, 0, true});
        }
        const auto lengths = check_rows(rows, 0, 1, kv_);
        kv_.reserve(lengths);
        for (const auto& [begin, end] : plan_chunks(rows, max_rows, int64_t{max_rows} * 8, window_)) {
            const std::span<const Row> chunk(rows.data() + begin, end - begin);
            const int32_t bucket = use_buckets ? graph_bucket(static_cast<int32_t>(chunk.size())) : 0;
            run_chunk(chunk, pack_chunk(chunk, {}, kv_, window_, bucket));
        }
        for (const auto& [stream, length] : lengths) kv_.set_length(stream, length);
    }

    void truncate(int32_t stream, int32_t length) {
        kv_.truncate(stream, length);
        written_[stream].resize(static_cast<size_t>(length));
    }

    // Backend::copy_prefix: the pairs KvBlocks returns, copied as
    // copy_kv_blocks_kernel does (whole blocks, every layer).
    void copy_prefix(int32_t from, int32_t to, int32_t length) {
        const auto pairs = kv_.copy_prefix(from, to, length);
        const int64_t elems = shape_.block_elems();
        for (const auto& [source, target] : pairs) {
            for (int32_t layer = 0; layer < kLayers; ++layer) {
                const size_t s = kv_block_offset(layer, source, kPoolBlocks, elems);
                const size_t t = kv_block_offset(layer, target, kPoolBlocks, elems);
                std::copy(pool_.begin() + static_cast<std::ptrdiff_t>(s),
                          pool_.begin() + static_cast<std::ptrdiff_t>(s + elems),
                          pool_.begin() + static_cast<std::ptrdiff_t>(t));
            }
        }
        written_[to].assign(written_[from].begin(), written_[from].begin() + length);
    }

private:
    struct Written {
        int32_t origin;   // the stream that wrote it (copies keep the writer)
        int32_t version;  // how many times that stream had written this position before
    };

    void run_chunk(std::span<const Row> chunk, const ChunkInputs& in) {
        // qk_rope_kv: every valid row stores its k and v head rows, all layers.
        for (size_t r = 0; r < in.rows.size(); ++r) {
            const DeviceRow& row = in.rows[r];
            if (!row.valid) {
                ASSERT_GE(r, chunk.size()) << "a real row is marked padding";
                ASSERT_EQ(row.split_count, 0) << "a padding row would run attention";
                continue;
            }
            const int32_t stream = chunk[r].stream;
            ASSERT_EQ(row.position, chunk[r].position);
            auto& positions = written_[stream];
            ASSERT_EQ(static_cast<int32_t>(positions.size()), row.position);
            const int32_t version = versions_[{stream, row.position}]++;
            positions.push_back({stream, version});
            const int32_t block = in.tables[static_cast<size_t>(row.table_offset + kv_table_entry(row.position))];
            for (int32_t layer = 0; layer < kLayers; ++layer) {
                for (int32_t kv_head = 0; kv_head < kKvHeads; ++kv_head) {
                    const size_t at = kv_block_offset(layer, 0, kPoolBlocks, shape_.block_elems()) +
                                      kv_row_offset(block, kv_head, kv_slot(row.position), kKvHeads, kHeadDim);
                    for (int32_t d = 0; d < kHeadDim; ++d)
                        pool_[at + d] = tag(stream, version, row.position, layer, kv_head, d);
                }
            }
        }
        // attention: each row's splits read [first, position], all layers and q heads.
        std::set<size_t> slots;
        for (size_t r = 0; r < in.rows.size(); ++r) {
            const DeviceRow& row = in.rows[r];
            if (row.split_count == 0) continue;
            const int32_t stream = chunk[r].stream;
            const auto table_size = static_cast<int32_t>(kv_.blocks(stream).size());
            const auto& truth = written_[stream];
            int32_t covered = 0;
            for (int32_t j = 0; j < row.split_count; ++j) {
                const SplitKeys keys = split_keys(row, j);
                ASSERT_EQ(keys.start % kAttentionSplit, 0);
                ASSERT_LE(keys.p0, keys.p1) << "an empty split";
                covered += keys.p1 - keys.p0 + 1;
                int32_t blocks[kSplitBlocks];
                for (int32_t t = 0; t < kSplitBlocks; ++t) {
                    const int32_t entry = split_table_entry(row, keys.start, t);
                    ASSERT_LT(entry, table_size) << "a table entry past the stream's blocks";
                    blocks[t] = entry >= 0 ? in.tables[static_cast<size_t>(row.table_offset + entry)] : -1;
                }
                for (int32_t h = 0; h < kHeads; ++h) {
                    ASSERT_TRUE(slots.insert(partial_slot(row, j, kHeads, h)).second)
                        << "two splits share a partial slot";
                    const int32_t kv_head = kv_head_of(h, kHeads, kKvHeads);
                    for (int32_t p = keys.p0; p <= keys.p1; ++p) {
                        const int32_t block = blocks[(p - keys.start) / kBlockPositions];
                        ASSERT_GE(block, 0) << "a key read from a block past the position";
                        const Written& w = truth[static_cast<size_t>(p)];
                        for (int32_t layer = 0; layer < kLayers; ++layer) {
                            const size_t at = kv_block_offset(layer, 0, kPoolBlocks, shape_.block_elems()) +
                                              kv_row_offset(block, kv_head, kv_slot(p), kKvHeads, kHeadDim);
                            const int32_t d = (p + h) % kHeadDim;
                            ASSERT_EQ(pool_[at + d], tag(w.origin, w.version, p, layer, kv_head, d))
                                << "stream " << stream << " row at " << row.position << " reads key " << p;
                            ++reads_;
                        }
                    }
                }
            }
            ASSERT_EQ(covered, row.position - first_key(row.position, window_) + 1) << "splits miss or repeat keys";
        }
        ASSERT_LE(slots.size(), static_cast<size_t>(in.total_splits) * kHeads);
    }

    int32_t window_;
    KvShape shape_;
    KvBlocks kv_;
    std::vector<uint64_t> pool_;
    std::map<int32_t, std::vector<Written>> written_;
    std::map<std::pair<int32_t, int32_t>, int32_t> versions_;
    int64_t reads_ = 0;
};

// Random rounds over five streams: forwards of 1..40 rows per stream,
// truncations (a rejected draft), rewrites, prompt-cache copies into
// another stream, closing and reopening.
void campaign(int32_t window, uint32_t seed) {
    SCOPED_TRACE("window " + std::to_string(window) + " seed " + std::to_string(seed));
    constexpr int32_t kStreams = 5, kCapacity = 1100;  // up to 5 splits a row
    KvEmulator e(window);
    std::mt19937 rng(seed);
    for (int32_t s = 0; s < kStreams; ++s) e.open(s, kCapacity);
    for (int round = 0; round < 300; ++round) {
        const uint32_t op = rng() % 10;
        const auto stream = static_cast<int32_t>(rng() % kStreams);
        const int32_t length = e.kv().length(stream);
        if (op < 6) {
            std::vector<std::pair<int32_t, int32_t>> appends;
            for (int32_t s = 0; s < kStreams; ++s) {
                const int32_t room = kCapacity - e.kv().length(s);
                const auto want = static_cast<int32_t>(rng() % (op < 3 ? 4 : 40));
                if (room > 0 && rng() % 2 == 0) appends.emplace_back(s, std::min(room, 1 + want));
            }
            std::shuffle(appends.begin(), appends.end(), rng);
            // Blocks run out on purpose now and then: nothing may change then.
            const int64_t free_before = e.kv().free_blocks();
            try {
                e.forward(appends, rng() % 3 != 0, 1 + static_cast<int32_t>(rng() % 70));
            } catch (const std::runtime_error&) {
                ASSERT_EQ(e.kv().free_blocks(), free_before);
                e.truncate(stream, length / 2);
            }
        } else if (op < 8 && length > 0) {
            e.truncate(stream, static_cast<int32_t>(rng() % static_cast<uint32_t>(length)));
        } else if (op == 8 && length > 0) {
            const auto to = static_cast<int32_t>((stream + 1 + rng() % (kStreams - 1)) % kStreams);
            const auto copied = static_cast<int32_t>(1 + rng() % static_cast<uint32_t>(length));
            try {
                e.copy_prefix(stream, to, copied);
            } catch (const std::runtime_error&) {  // pool full: KvBlocks changed nothing
            }
        } else {
            e.kv().close(stream);
            e.open(stream, kCapacity);
        }
        if (::testing::Test::HasFatalFailure()) return;
    }
    std::printf("window %d: %lld emulated key reads, every one at the slot its position was written to\n", window,
                static_cast<long long>(e.reads()));
}

TEST(GpuKvAddressing, EveryKeyReadIsTheOneItsPositionWrote) {
    campaign(0, 1);
    campaign(0, 2);
}

TEST(GpuKvAddressing, SlidingWindowsReadOnlyTheirWindow) {
    campaign(40, 3);
    campaign(260, 4);  // a window across a split boundary
}

TEST(GpuKvAddressing, PrefixCopiesOfPartialBlocksThenContinue) {
    KvEmulator e(0);
    e.open(1, 400);
    e.open(2, 400);
    e.forward({{1, 100}}, false, 512);
    e.forward({{2, 150}}, true, 64);  // other content, longer, to be replaced
    e.copy_prefix(1, 2, 37);          // two whole blocks and 5 positions of a third
    EXPECT_EQ(e.kv().length(2), 37);
    e.forward({{2, 300}, {1, 20}}, false, 512);  // the copy's partial block is written on by its new owner
    e.copy_prefix(2, 1, 256);                    // exactly one split
    e.forward({{1, 3}}, true, 64);
    EXPECT_GT(e.reads(), 0);
}

TEST(GpuKvAddressing, SplitsCoverTheirKeysOnce) {
    for (int32_t window : {0, 40, 256, 257}) {
        for (int32_t position : {0, 15, 16, 255, 256, 257, 511, 512, 1100, 2300, 4095}) {
            DeviceRow row;
            row.position = position;
            row.first = first_key(position, window);
            row.split_begin = row.first / kAttentionSplit;
            row.split_count = row_splits(position, window);
            int32_t next = row.first;
            for (int32_t j = 0; j < row.split_count; ++j) {
                const SplitKeys keys = split_keys(row, j);
                EXPECT_EQ(keys.p0, next) << "window " << window << " position " << position << " split " << j;
                EXPECT_LT(keys.p1 - keys.start, kAttentionSplit);
                next = keys.p1 + 1;
            }
            EXPECT_EQ(next, position + 1) << "window " << window << " position " << position;
        }
    }
}

}  // namespace
}  // namespace tf::gpu::kernels
