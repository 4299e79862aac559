// DELETE /v1/recall: what it deletes, what stays, a chunk that cannot be
// deleted, and who refuses.
#include <gtest/gtest.h>

#include <cerrno>
#include <set>

#include "recall/record.h"
#include "recall_test_util.h"

namespace tf::recall {
namespace {

using testing::distinct_ids;
using testing::slice;
using testing::TempDir;

// An unlink that fails with EPERM for the paths in `refuse` (a root test
// process cannot make a real unlink fail: root ignores directory modes).
struct RefusingUnlink {
    std::shared_ptr<std::set<std::string>> refuse = std::make_shared<std::set<std::string>>();
    FsOps ops(FsOps base) const {
        auto refused = refuse;
        base.unlink = [refused, real = FsOps::real().unlink](const std::string& path) {
            if (refused->count(path)) {
                errno = EPERM;
                return -1;
            }
            return real(path);
        };
        return base;
    }
};

// DELETE removes all chunk files and resets the in-memory record, landing
// rates and counters included; the record keeps working afterwards
// (docs/recall.md, "DELETE").
TEST(RecordDelete, DeletesEveryChunkFileAndEmptiesMemoryLandingRatesAndCounters) {
    TempDir dir;
    auto record = Record::open(testing::small_options(dir.path()));
    std::vector<uint32_t> ids = distinct_ids(1, 3000);
    record->add(ids);
    record->lookup(slice(ids, 0, 100), 4);
    record->offers().record_outcome(70, 10, 10);
    ASSERT_EQ(list_chunk_files(dir.path()).size(), 3u);

    EraseResult result = record->erase_all();
    EXPECT_TRUE(result.ok()) << result.message;
    EXPECT_TRUE(list_chunk_files(dir.path()).empty());
    RecordStats stats = record->stats();
    EXPECT_EQ(stats.state, RecallState::writing);
    EXPECT_EQ(stats.chunks, 0u);
    EXPECT_EQ(stats.ids, 0u);
    EXPECT_EQ(stats.disk_bytes, 0u);
    EXPECT_EQ(stats.memory_bytes, stats.key_table_bytes);
    EXPECT_EQ(stats.adds, 0u);
    EXPECT_EQ(stats.ids_written, 0u);
    EXPECT_EQ(stats.lookups, 0u);
    EXPECT_EQ(stats.landing.copies_offered, 0u);
    EXPECT_EQ(stats.landing.tokens_landed, 0u);
    EXPECT_EQ(stats.landing.buckets[2].expected_landed, OfferPolicy::kPriorLanded);
    EXPECT_EQ(record->lookup(slice(ids, 0, 100), 4).length, 0u);
    // The record goes on: the same ids are new again.
    EXPECT_EQ(record->add(ids).ids_written, 3000u);
}

// DELETE leaves the directory, the identity file and the lock alone (none of
// them holds ids), and the lock stays held (docs/recall.md, "DELETE").
TEST(RecordDelete, TheDirectoryIdentityAndLockStay) {
    TempDir dir;
    auto record = Record::open(testing::small_options(dir.path()));
    record->add(distinct_ids(1, 500));
    ASSERT_TRUE(record->erase_all().ok());
    EXPECT_EQ(testing::file_mode(dir.path()), 0700u);
    EXPECT_TRUE(testing::exists(dir.path() + "/identity"));
    EXPECT_TRUE(testing::exists(dir.path() + "/lock"));
    DirectoryLock other;
    EXPECT_EQ(other.try_lock(dir.path()), DirectoryLock::Outcome::held_elsewhere);  // still held
    EXPECT_TRUE(read_identity(dir.path()));
}

// A chunk file that cannot be removed makes DELETE fail with an error that
// names the file, and adds stay refused until some later DELETE removes
// every chunk (docs/recall.md, "DELETE" and "States").
TEST(RecordDelete, AChunkThatCannotBeDeletedIsNamedAndPausesAddsUntilALaterDeleteDeletesEveryChunk) {
    TempDir dir;
    RefusingUnlink unlink;
    RecordOptions options = testing::small_options(dir.path());
    options.fs = unlink.ops(options.fs);
    auto record = Record::open(options);
    record->add(distinct_ids(1, 2500));
    std::string stuck = dir.path() + "/chunk-000000000002.ids";
    unlink.refuse->insert(stuck);

    EraseResult failed = record->erase_all();
    EXPECT_EQ(failed.outcome, EraseResult::Outcome::failed);
    EXPECT_EQ(failed.failed_file, stuck);
    EXPECT_NE(failed.message.find(stuck), std::string::npos) << failed.message;
    EXPECT_EQ(record->state(), RecallState::paused_delete);
    EXPECT_EQ(list_chunk_files(dir.path()).size(), 1u);  // the others went
    EXPECT_NE(record->stats().last_error.find(stuck), std::string::npos);

    AddResult refused = record->add(distinct_ids(2, 300));
    EXPECT_FALSE(refused.accepted);
    EXPECT_EQ(refused.state, RecallState::paused_delete);
    EXPECT_EQ(list_chunk_files(dir.path()).size(), 1u);

    // Still stuck: a second DELETE fails the same way and stays paused.
    EXPECT_EQ(record->erase_all().outcome, EraseResult::Outcome::failed);
    EXPECT_EQ(record->state(), RecallState::paused_delete);

    unlink.refuse->clear();
    EraseResult erased = record->erase_all();
    EXPECT_TRUE(erased.ok()) << erased.message;
    EXPECT_EQ(record->state(), RecallState::writing);
    EXPECT_TRUE(list_chunk_files(dir.path()).empty());
    std::vector<uint32_t> ids = distinct_ids(3, 300);
    EXPECT_TRUE(record->add(ids).accepted);
    EXPECT_EQ(record->lookup(slice(ids, 0, 50), 4).continuation, slice(ids, 50, 54));
}

// An eviction whose oldest chunk cannot be removed pauses adds the same way,
// until a DELETE succeeds (docs/recall.md, "Sizing" and "DELETE").
TEST(RecordDelete, AnEvictionThatCannotDeleteItsChunkPausesAddsUntilDelete) {
    TempDir dir;
    RefusingUnlink unlink;
    RecordOptions options = testing::small_options(dir.path(), 1024, 2);
    options.fs = unlink.ops(options.fs);
    auto record = Record::open(options);
    std::vector<uint32_t> kept = distinct_ids(1, 2000);
    record->add(kept);
    unlink.refuse->insert(dir.path() + "/chunk-000000000001.ids");
    AddResult added = record->add(distinct_ids(2, 500));
    EXPECT_NE(added.error.find("chunk-000000000001.ids"), std::string::npos) << added.error;
    EXPECT_EQ(record->state(), RecallState::paused_delete);
    EXPECT_EQ(list_chunk_files(dir.path()).size(), 2u);
    // Serving goes on from what the record holds.
    EXPECT_EQ(record->lookup(slice(kept, 0, 50), 4).continuation, slice(kept, 50, 54));
    EXPECT_FALSE(record->add(distinct_ids(3, 500)).accepted);
    unlink.refuse->clear();
    EXPECT_TRUE(record->erase_all().ok());
    EXPECT_TRUE(record->add(distinct_ids(3, 500)).accepted);
}

// Only the writing server may DELETE: one started read-only, or one following
// a record that another server writes, refuses (a 409 over HTTP)
// (docs/recall.md, "DELETE").
TEST(RecordDelete, ReadOnlyAndFollowingServersRefuseDelete) {
    TempDir dir;
    auto writer = Record::open(testing::small_options(dir.path()));
    writer->add(distinct_ids(1, 500));
    auto follower = Record::open(testing::small_options(dir.path()));
    EraseResult following = follower->erase_all();
    EXPECT_EQ(following.outcome, EraseResult::Outcome::refused);
    EXPECT_FALSE(following.message.empty());

    RecordOptions options = testing::small_options(dir.path());
    options.read_only = true;
    auto reader = Record::open(options);
    EraseResult read_only = reader->erase_all();
    EXPECT_EQ(read_only.outcome, EraseResult::Outcome::refused);
    EXPECT_NE(read_only.message.find("read-only"), std::string::npos);

    EXPECT_EQ(list_chunk_files(dir.path()).size(), 1u);
    EXPECT_EQ(follower->stats().ids, 500u);  // nothing emptied either
}

}  // namespace
}  // namespace tf::recall
