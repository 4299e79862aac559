// Dedupe: which parts of an incoming run are added (recall/dedupe.h).
#include <gtest/gtest.h>

#include "recall/chunk_file.h"
#include "recall/dedupe.h"
#include "recall_test_util.h"

namespace tf::recall {
namespace {

using testing::concat;
using testing::distinct_ids;
using testing::slice;

class DedupeTest : public ::testing::Test {
   protected:
    DedupeTest() : index_(kChunkIds, 1 << 20) {}

    // Writes what plan_add says, as Record does.
    AddPlan add(const std::vector<uint32_t>& run) {
        AddPlan plan = plan_add(index_, run);
        for (const AddPlan::Piece& piece : plan.pieces) {
            if (index_.empty()) index_.begin_chunk(1);
            if (index_.last_id() != kSeparator) index_.append(&kSeparator, 1);
            index_.append(run.data() + piece.begin, piece.end - piece.begin);
        }
        return plan;
    }

    size_t written(const AddPlan& plan) {
        size_t n = 0;
        for (const AddPlan::Piece& piece : plan.pieces) n += piece.end - piece.begin;
        return n;
    }

    Index index_;
};

TEST_F(DedupeTest, ANewRunIsAddedWholeAsOneSegment) {
    std::vector<uint32_t> run = distinct_ids(1, 1000);
    AddPlan plan = add(run);
    ASSERT_EQ(plan.pieces.size(), 1u);
    EXPECT_EQ(plan.pieces[0].begin, 0u);
    EXPECT_EQ(plan.pieces[0].end, 1000u);
    EXPECT_EQ(plan.held_ids, 0u);
}

// Repeating a request leaves the record unchanged, the whole run counting as
// held (docs/recall.md, "On disk", what gets added).
TEST_F(DedupeTest, ARequestSentTwiceAddsNothingTheSecondTime) {
    std::vector<uint32_t> run = distinct_ids(1, 10000);
    add(run);
    AddPlan again = add(run);
    EXPECT_TRUE(again.pieces.empty());
    EXPECT_EQ(again.held_ids, 10000u);
    EXPECT_EQ(index_.ids(), 10000u);
}

TEST_F(DedupeTest, AShortRequestSentTwiceAddsNothingTheSecondTimeEither) {
    std::vector<uint32_t> run = distinct_ids(1, 40);  // under 128 ids: held whole
    EXPECT_EQ(add(run).pieces.size(), 1u);
    AddPlan again = add(run);
    EXPECT_TRUE(again.pieces.empty());
    EXPECT_EQ(again.held_ids, 40u);
}

// A held stretch of 128+ ids is skipped while the new ids around it are
// written (docs/recall.md, "On disk", what gets added).
TEST_F(DedupeTest, AHeldRunOf128IdsIsNotAddedAgainButItsNeighboursAre) {
    std::vector<uint32_t> held = distinct_ids(1, 300);
    add(held);
    std::vector<uint32_t> before = distinct_ids(2, 50);
    std::vector<uint32_t> after = distinct_ids(3, 60);
    std::vector<uint32_t> run = concat({before, slice(held, 100, 228), after});  // 128 held ids
    AddPlan plan = add(run);
    EXPECT_EQ(plan.held_ids, 128u);
    ASSERT_EQ(plan.pieces.size(), 2u);
    // Each new part keeps 16 ids of the held run beside it, so a match on the
    // held text still continues into the new text.
    EXPECT_EQ(plan.pieces[0].begin, 0u);
    EXPECT_EQ(plan.pieces[0].end, 50u + 16u);
    EXPECT_EQ(plan.pieces[1].begin, 50u + 128u - 16u);
    EXPECT_EQ(plan.pieces[1].end, run.size());
    // A stream whose last 16 ids end the held run ties between the old place
    // and the new piece; the most recent, the new text, wins.
    EXPECT_EQ(index_.lookup(slice(held, 212, 228), 10).continuation, slice(after, 0, 10));
    // A longer tail matches the old place for longer: the longest match wins.
    EXPECT_EQ(index_.lookup(slice(held, 180, 228), 10).continuation, slice(held, 228, 238));
}

TEST_F(DedupeTest, AHeldRunOf127IdsIsAddedAgain) {
    std::vector<uint32_t> held = distinct_ids(1, 300);
    add(held);
    std::vector<uint32_t> run = concat({distinct_ids(2, 50), slice(held, 100, 227), distinct_ids(3, 60)});
    AddPlan plan = add(run);
    EXPECT_EQ(plan.held_ids, 0u);
    ASSERT_EQ(plan.pieces.size(), 1u);
    EXPECT_EQ(written(plan), run.size());
}

// dedupe.h: "A stride of 112 = 128 - 16 guarantees that every held run of
// 128 or more ids contains a sampled window".
TEST_F(DedupeTest, EveryHeldRunOf128IdsIsFoundWhereverItStarts) {
    std::vector<uint32_t> held = distinct_ids(1, 2000);
    add(held);
    for (size_t offset = 0; offset < 240; ++offset) {
        std::vector<uint32_t> run = concat({distinct_ids(1000 + static_cast<uint32_t>(offset), offset),
                                            slice(held, 500, 628), distinct_ids(5000, 3)});
        AddPlan plan = plan_add(index_, run);
        EXPECT_EQ(plan.held_ids, 128u) << "held run at offset " << offset;
    }
}

TEST_F(DedupeTest, SeveralHeldRunsInOneRequestAreAllSkipped) {
    std::vector<uint32_t> a = distinct_ids(1, 400);
    std::vector<uint32_t> b = distinct_ids(2, 400);
    add(a);
    add(b);
    std::vector<uint32_t> fresh = distinct_ids(3, 30);
    std::vector<uint32_t> run = concat({a, fresh, b});
    AddPlan plan = add(run);
    EXPECT_EQ(plan.held_ids, 800u);
    ASSERT_EQ(plan.pieces.size(), 1u);
    EXPECT_EQ(written(plan), 16u + 30u + 16u);
    // The same request again: its new middle is now held whole.
    AddPlan again = add(run);
    EXPECT_TRUE(again.pieces.empty());
    EXPECT_EQ(again.held_ids, run.size());
}

// dedupe.h: "A piece of fewer than 17 ids is not added: it holds no 16-id key
// with an id after it, so no lookup could ever return any of it."
TEST_F(DedupeTest, APieceTooShortToEverBeMatchedIsNotAdded) {
    AddPlan plan = add(distinct_ids(1, 16));
    EXPECT_TRUE(plan.pieces.empty());
    EXPECT_EQ(plan.short_ids, 16u);
    EXPECT_EQ(add(distinct_ids(2, 17)).pieces.size(), 1u);
}

TEST_F(DedupeTest, ARegeneratedReplyAddsOnlyItsNewEndingWithContext) {
    std::vector<uint32_t> prompt = distinct_ids(1, 500);
    std::vector<uint32_t> reply = distinct_ids(2, 300);
    add(concat({prompt, reply}));
    std::vector<uint32_t> new_ending = distinct_ids(3, 5);
    std::vector<uint32_t> regenerated = concat({prompt, slice(reply, 0, 200), new_ending});
    AddPlan plan = add(regenerated);
    EXPECT_EQ(plan.held_ids, 700u);
    ASSERT_EQ(plan.pieces.size(), 1u);
    EXPECT_EQ(written(plan), 16u + 5u);
    // The most recent continuation of the reply's first 200 ids is the new
    // ending; a tail that also matches further back prefers the longer match.
    EXPECT_EQ(index_.lookup(slice(reply, 184, 200), 5).continuation, new_ending);
    EXPECT_EQ(index_.lookup(slice(reply, 150, 200), 5).continuation, slice(reply, 200, 205));
}

}  // namespace
}  // namespace tf::recall
