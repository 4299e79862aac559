// Two servers on one directory: the second follows (real flock, in-process
// and across a fork).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "recall/record.h"
#include "recall_test_util.h"

namespace tf::recall {
namespace {

using testing::distinct_ids;
using testing::slice;
using testing::TempDir;

// A record opened while another one holds the lock follows: it sees what was
// stored when it opened and never writes (docs/recall.md, "States", `following`).
TEST(RecordFollowing, ASecondRecordOnAWrittenDirectoryFollowsTheRecordAsItWas) {
    TempDir dir;
    auto writer = Record::open(testing::small_options(dir.path()));
    std::vector<uint32_t> before = distinct_ids(1, 500);
    writer->add(before);

    auto follower = Record::open(testing::small_options(dir.path()));
    EXPECT_EQ(writer->state(), RecallState::writing);
    EXPECT_EQ(follower->state(), RecallState::following);
    EXPECT_EQ(follower->lookup(slice(before, 0, 100), 8).continuation, slice(before, 100, 108));

    // "as it was": what the writer adds later is not seen...
    std::vector<uint32_t> later = distinct_ids(2, 500);
    writer->add(later);
    EXPECT_EQ(follower->lookup(slice(later, 0, 100), 8).length, 0u);
    // ...and the follower "adds nothing".
    std::vector<uint32_t> on_disk = testing::read_all_chunks(dir.path());
    AddResult added = follower->add(distinct_ids(3, 500));
    EXPECT_FALSE(added.accepted);
    EXPECT_EQ(added.state, RecallState::following);
    EXPECT_EQ(testing::read_all_chunks(dir.path()), on_disk);
}

TEST(RecordFollowing, AFollowerDoesNotRepairOrDeleteTheWritersFiles) {
    TempDir dir;
    auto writer = Record::open(testing::small_options(dir.path(), 1024, 2));
    writer->add(distinct_ids(1, 300));
    std::string newest = list_chunk_files(dir.path()).back().path;
    { std::ofstream(newest, std::ios::app | std::ios::binary) << 'x'; }  // a torn id, as mid-write
    auto follower = Record::open(testing::small_options(dir.path(), 1024, 2));
    EXPECT_EQ(follower->stats().ids, 300u);
    EXPECT_EQ(testing::file_size(newest), 300u * 4 + 1);
}

TEST(RecordFollowing, OnceTheWriterIsGoneTheNextServerWrites) {
    TempDir dir;
    auto writer = Record::open(testing::small_options(dir.path()));
    std::vector<uint32_t> ids = distinct_ids(1, 500);
    writer->add(ids);
    writer.reset();
    auto next = Record::open(testing::small_options(dir.path()));
    EXPECT_EQ(next->state(), RecallState::writing);
    EXPECT_EQ(next->lookup(slice(ids, 0, 100), 8).continuation, slice(ids, 100, 108));
}

// The same across processes: a forked child takes the lock the way another
// tensorfold would (its own open file description and flock).
TEST(RecordFollowing, ALockHeldByAnotherProcessMakesThisServerFollow) {
    TempDir dir;
    std::vector<uint32_t> ids = distinct_ids(1, 500);
    Record::open(testing::small_options(dir.path()))->add(ids);

    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(ready[0]);
        int fd = ::open((dir.path() + "/lock").c_str(), O_RDWR);
        char ok = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0 ? 'y' : 'n';
        if (::write(ready[1], &ok, 1) != 1) ::_exit(2);
        ::pause();  // hold the lock until killed
        ::_exit(0);
    }
    ::close(ready[1]);
    char ok = 0;
    ASSERT_EQ(::read(ready[0], &ok, 1), 1);
    ::close(ready[0]);
    ASSERT_EQ(ok, 'y');

    {
        auto follower = Record::open(testing::small_options(dir.path()));
        EXPECT_EQ(follower->state(), RecallState::following);
        EXPECT_EQ(follower->lookup(slice(ids, 0, 100), 8).continuation, slice(ids, 100, 108));
        EXPECT_FALSE(follower->add(distinct_ids(2, 300)).accepted);
        EXPECT_EQ(follower->erase_all().outcome, EraseResult::Outcome::refused);
    }

    // A writer killed with -9 leaves no stale lock behind.
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_EQ(Record::open(testing::small_options(dir.path()))->state(), RecallState::writing);
}

}  // namespace
}  // namespace tf::recall
