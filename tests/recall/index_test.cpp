// The index alone, in memory: keys of 16 ids, longest match, most recent on
// ties, segments, eviction, memory.
#include <gtest/gtest.h>

#include "recall/chunk_file.h"
#include "recall/index.h"
#include "recall_test_util.h"

namespace tf::recall {
namespace {

using testing::concat;
using testing::distinct_ids;
using testing::slice;

constexpr uint32_t kSmallChunk = 256;

// An index over chunks of kSmallChunk ids that appends segments the way
// Record does: a separator before each segment unless one is already last.
class IndexTest : public ::testing::Test {
   protected:
    explicit IndexTest(uint64_t key_table_bytes = 1 << 20) : index_(kSmallChunk, key_table_bytes) {}

    void add_segment(const std::vector<uint32_t>& ids) {
        std::vector<uint32_t> buffer;
        if (index_.last_id() != kSeparator) buffer.push_back(kSeparator);
        buffer.insert(buffer.end(), ids.begin(), ids.end());
        size_t done = 0;
        while (done < buffer.size()) {
            if (index_.empty() || index_.newest_size() == kSmallChunk) {
                if (!index_.empty() && index_.chunk_count() == max_chunks_) index_.evict_oldest();
                index_.begin_chunk(next_sequence_++);
            }
            size_t n = std::min<size_t>(kSmallChunk - index_.newest_size(), buffer.size() - done);
            index_.append(buffer.data() + done, n);
            done += n;
        }
    }

    Index index_;
    uint64_t next_sequence_ = 1;
    size_t max_chunks_ = 1000;
};

// A lookup reports how long the match is and returns what followed the
// earlier occurrence; that continuation is the copy a repeating stream drafts
// (docs/recall.md, introduction and "Offer policy").
TEST_F(IndexTest, LookupReturnsTheMatchLengthAndTheEarlierContinuation) {
    std::vector<uint32_t> ids = distinct_ids(1, 200);
    add_segment(ids);
    Match match = index_.lookup(slice(ids, 60, 100), 10);
    EXPECT_EQ(match.length, 40u);  // the whole tail it was given
    EXPECT_EQ(match.continuation, slice(ids, 100, 110));
}

// Matches shorter than 16 ids do not count, and no match spans a separator
// (docs/recall.md, "Offer policy" and "On disk").
TEST_F(IndexTest, AMatchNeedsAtLeast16Ids) {
    std::vector<uint32_t> ids = distinct_ids(1, 100);
    add_segment(ids);
    EXPECT_EQ(index_.lookup(slice(ids, 10, 26), 4).length, 16u);
    EXPECT_EQ(index_.lookup(slice(ids, 10, 25), 4).length, 0u);  // 15 ids: no key
    // The last 16 ids must match; an earlier match of the tail does not count.
    std::vector<uint32_t> tail = concat({slice(ids, 10, 40), distinct_ids(2, 1)});
    EXPECT_EQ(index_.lookup(tail, 4).length, 0u);
}

// Issue 5: "lookup(...) returns the longest earlier match (≥16; report its
// length) and its continuation".
TEST_F(IndexTest, TheLongestMatchWinsOverAMoreRecentShorterOne) {
    std::vector<uint32_t> key = distinct_ids(1, 16);
    std::vector<uint32_t> before = distinct_ids(2, 30);
    std::vector<uint32_t> long_continuation = distinct_ids(3, 8);
    std::vector<uint32_t> short_continuation = distinct_ids(4, 8);
    add_segment(concat({before, key, long_continuation}));               // 46-id match
    add_segment(concat({slice(before, 20, 30), key, distinct_ids(5, 8)}));  // 26 ids
    add_segment(concat({distinct_ids(6, 30), key, short_continuation}));   // 16 ids, most recent
    Match match = index_.lookup(concat({distinct_ids(7, 5), before, key}), 8);
    EXPECT_EQ(match.length, 46u);
    EXPECT_EQ(match.continuation, long_continuation);
}

// Issue 5: "most recent on ties".
TEST_F(IndexTest, TheMostRecentOfEquallyLongMatchesWins) {
    std::vector<uint32_t> key = distinct_ids(1, 20);
    add_segment(concat({distinct_ids(2, 5), key, distinct_ids(3, 8)}));
    std::vector<uint32_t> recent = distinct_ids(4, 8);
    add_segment(concat({distinct_ids(5, 5), key, recent}));
    Match match = index_.lookup(concat({distinct_ids(6, 10), key}), 8);
    EXPECT_EQ(match.length, 20u);
    EXPECT_EQ(match.continuation, recent);
}

// Issue 5: "Segment boundaries between appended runs so that no match crosses
// from one into the next."
TEST_F(IndexTest, NoMatchOrContinuationCrossesASegmentBoundary) {
    std::vector<uint32_t> first = distinct_ids(1, 40);
    std::vector<uint32_t> second = distinct_ids(2, 40);
    add_segment(first);
    add_segment(second);
    // The end of `first` is not continued by `second`.
    EXPECT_EQ(index_.lookup(slice(first, 10, 40), 8).length, 0u);
    // A tail that spans the boundary matches only within `second`.
    Match match = index_.lookup(concat({slice(first, 30, 40), slice(second, 0, 20)}), 4);
    EXPECT_EQ(match.length, 20u);
    EXPECT_EQ(match.continuation, slice(second, 20, 24));
    // A continuation stops at the end of its segment.
    EXPECT_EQ(index_.lookup(slice(second, 0, 30), 100).continuation, slice(second, 30, 40));
    // No key spans the boundary: the 16 ids around it are not found.
    EXPECT_EQ(index_.lookup(concat({slice(first, 32, 40), slice(second, 0, 8)}), 4).length, 0u);
}

TEST_F(IndexTest, MatchesAndKeysSpanChunkBoundariesWithinASegment) {
    std::vector<uint32_t> ids = distinct_ids(1, 3 * kSmallChunk);
    add_segment(ids);  // the first segment needs no separator: chunks 1-3, full
    ASSERT_EQ(index_.chunk_count(), 3u);
    // A key whose 16 ids straddle the first chunk boundary (position 255|256).
    Match match = index_.lookup(slice(ids, kSmallChunk - 40, kSmallChunk + 5), 6);
    EXPECT_EQ(match.length, 45u);
    EXPECT_EQ(match.continuation, slice(ids, kSmallChunk + 5, kSmallChunk + 11));
    // A continuation runs on into the next chunk.
    EXPECT_EQ(index_.lookup(slice(ids, 100, 250), 20).continuation, slice(ids, 250, 270));
}

// Issue 5: "Past --recall-gib the oldest chunk file is deleted and its ids
// leave the index (no stale hits)."
TEST_F(IndexTest, EvictedIdsLeaveTheIndexWithNoStaleHits) {
    max_chunks_ = 2;
    std::vector<uint32_t> old_ids = distinct_ids(1, kSmallChunk - 1);  // fills chunk 1 with its separator
    add_segment(old_ids);
    ASSERT_EQ(index_.lookup(slice(old_ids, 0, 50), 4).length, 50u);
    std::vector<uint32_t> newer = distinct_ids(2, 2 * kSmallChunk - 1);
    add_segment(newer);  // chunks 2 and 3: chunk 1 is evicted
    EXPECT_EQ(index_.oldest_sequence(), 2u);
    EXPECT_EQ(index_.chunk_count(), 2u);
    for (size_t end = 16; end <= old_ids.size(); end += 7) {
        EXPECT_EQ(index_.lookup(slice(old_ids, 0, end), 4).length, 0u) << end;
    }
    EXPECT_EQ(index_.lookup(slice(newer, 0, 50), 4).length, 50u);
}

TEST_F(IndexTest, AMatchIsMeasuredOnlyBackToTheOldestLiveId) {
    max_chunks_ = 2;
    std::vector<uint32_t> ids = distinct_ids(1, 3 * kSmallChunk);
    add_segment(ids);  // one segment over chunks 1-3; chunks 2 and 3 stay
    EXPECT_EQ(index_.oldest_sequence(), 2u);
    // ids[k] sits at offset k; chunk 2 starts at ids[256].
    Match match = index_.lookup(slice(ids, 200, 600), 4);
    EXPECT_EQ(match.length, 600u - 256u);
    EXPECT_EQ(match.continuation, slice(ids, 600, 604));
}

// Issue 5: "walk a bounded number of chain steps (state the bound)".
TEST_F(IndexTest, LookupWalksAtMostKMaxChainStepsMostRecentFirst) {
    std::vector<uint32_t> key = distinct_ids(1, 16);
    std::vector<uint32_t> context = distinct_ids(2, 30);
    // The longest match is the oldest; then more than kMaxChainSteps shorter ones.
    std::vector<uint32_t> oldest_continuation = distinct_ids(3, 4);
    add_segment(concat({context, key, oldest_continuation}));
    for (uint32_t i = 0; i < Index::kMaxChainSteps; ++i) add_segment(concat({distinct_ids(100 + i, 3), key, {i}}));
    Match match = index_.lookup(concat({context, key}), 4);
    EXPECT_EQ(match.length, 16u) << "the oldest, longer match lies beyond the bound";
    EXPECT_EQ(match.continuation, (std::vector<uint32_t>{Index::kMaxChainSteps - 1}));
}

TEST_F(IndexTest, WithinTheChainBoundTheOlderLongerMatchIsFound) {
    std::vector<uint32_t> key = distinct_ids(1, 16);
    std::vector<uint32_t> context = distinct_ids(2, 30);
    std::vector<uint32_t> oldest_continuation = distinct_ids(3, 4);
    add_segment(concat({context, key, oldest_continuation}));
    for (uint32_t i = 0; i + 1 < Index::kMaxChainSteps; ++i) add_segment(concat({distinct_ids(100 + i, 3), key, {i}}));
    Match match = index_.lookup(concat({context, key}), 4);
    EXPECT_EQ(match.length, 46u);
    EXPECT_EQ(match.continuation, oldest_continuation);
}

TEST_F(IndexTest, AMatchWithoutContinuationIsNotReturned) {
    std::vector<uint32_t> ids = distinct_ids(1, 40);
    add_segment(ids);
    EXPECT_EQ(index_.lookup(ids, 8).length, 0u);  // matches the whole segment, nothing follows
}

TEST_F(IndexTest, SeparatorIdsInATailNeverMatch) {
    std::vector<uint32_t> ids = distinct_ids(1, 40);
    add_segment(ids);
    add_segment(distinct_ids(2, 40));
    std::vector<uint32_t> tail = concat({slice(ids, 30, 40), {kSeparator}, distinct_ids(2, 20)});
    EXPECT_EQ(index_.lookup(tail, 4).length, 20u);
}

TEST(IndexMemory, KeyTableIsRecallBytesOverEight) {
    // The key table is the disk budget / 8, rounded down to a power of two (docs/recall.md, "Sizing").
    EXPECT_EQ(Index::key_table_bytes_for(uint64_t{64} << 20), uint64_t{8} << 20);
    EXPECT_EQ(Index::key_table_bytes_for(uint64_t{512} << 20), uint64_t{64} << 20);
    EXPECT_EQ(Index::key_table_bytes_for(uint64_t{1} << 30), uint64_t{128} << 20);
    // A size that is not a power of two rounds down.
    EXPECT_EQ(Index::key_table_bytes_for(uint64_t{100} << 20), uint64_t{8} << 20);
}

// A chunk's 8 MiB is charged in full once it holds a single id, on top of the
// key table (docs/recall.md, "Sizing").
TEST(IndexMemory, EachChunkTakesEightBytesPerIdFromItsFirstId) {
    Index index(kChunkIds, uint64_t{8} << 20);
    EXPECT_EQ(index.memory_bytes(), uint64_t{8} << 20);
    index.begin_chunk(1);
    uint32_t one = 5;
    index.append(&one, 1);
    EXPECT_EQ(index.memory_bytes(), uint64_t{16} << 20);
    EXPECT_EQ(index.chunk_memory_bytes(), uint64_t{8} << 20);
}

}  // namespace
}  // namespace tf::recall
