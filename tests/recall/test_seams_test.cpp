// The disk-fault seams (recall/test_seams.h) and what the record does with
// the faults they inject: a write that fails part way through, a process
// killed in the middle of an append, a free-space reading from a file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>

#include "recall/record.h"
#include "recall/test_seams.h"
#include "recall_test_util.h"

namespace tf::recall {
namespace {

using testing::distinct_ids;
using testing::slice;
using testing::TempDir;

// The seams as the server builds them, from a fake environment.
FsOps seamed(const std::map<std::string, std::string>& env, std::vector<std::string>* active = nullptr) {
    std::vector<std::string> ignored;
    return with_test_seams(
        testing::small_options("").fs,
        [&env](const char* name) -> const char* {
            auto it = env.find(name);
            return it == env.end() ? nullptr : it->second.c_str();
        },
        active ? active : &ignored);
}

TEST(WriteFaultSpec, ParsesEveryFaultInOrder) {
    EXPECT_EQ(parse_write_faults("2:ENOSPC"), (std::vector<WriteFault>{{2, ENOSPC, false}}));
    EXPECT_EQ(parse_write_faults("1:EIO, 7:EDQUOT,3:SIGKILL"),
              (std::vector<WriteFault>{{1, EIO, false}, {7, EDQUOT, false}, {3, 0, true}}));
}

TEST(WriteFaultSpec, RejectsMalformedItemsNamingThem) {
    for (const char* spec : {"", "ENOSPC", "0:EIO", "x:EIO", "2:EPERM", "2:EIO,", "-1:EIO"}) {
        try {
            parse_write_faults(spec);
            ADD_FAILURE() << "accepted '" << spec << "'";
        } catch (const RecallError& error) {
            EXPECT_NE(std::string(error.what()).find(kWriteFaultsVariable), std::string::npos) << error.what();
        }
    }
}

TEST(FreeBytesText, IsADecimalByteCount) {
    EXPECT_EQ(parse_free_bytes("4294967296\n"), uint64_t{4} << 30);
    EXPECT_EQ(parse_free_bytes(" 0 "), 0u);
    EXPECT_EQ(parse_free_bytes(""), std::nullopt);
    EXPECT_EQ(parse_free_bytes("4 GiB"), std::nullopt);
    EXPECT_EQ(parse_free_bytes("-1"), std::nullopt);
}

TEST(TornWrite, LeavesPartOfTheRequestEndingInsideAnId) {
    for (size_t bytes = 4; bytes <= 4096; bytes += 4) {
        const size_t torn = torn_write_bytes(bytes);
        EXPECT_LT(torn, bytes);
        EXPECT_GT(torn, 0u);
        EXPECT_NE(torn % 4, 0u) << bytes;
    }
}

TEST(TestSeams, NoVariableNoSeam) {
    std::vector<std::string> active;
    FsOps ops = seamed({}, &active);
    EXPECT_TRUE(active.empty());
    EXPECT_EQ(ops.free_bytes("/"), uint64_t{100} << 30);  // the base, untouched
}

class AppendFault : public ::testing::TestWithParam<int> {};

// A write that stops part way and then fails (ENOSPC or EIO) is cut back to
// the earlier appends, shows in last_error, pauses adds, and the next add
// (the fault fired once; space is plentiful) goes in after the intact ids.
TEST_P(AppendFault, AFailedWriteKeepsEveryEarlierIdAndTheNextAddGoesOn) {
    const int error = GetParam();
    TempDir dir;
    RecordOptions options = testing::small_options(dir.path());
    std::vector<std::string> active;
    options.fs = seamed({{kWriteFaultsVariable, "2:" + std::string(error == EIO ? "EIO" : "ENOSPC")}}, &active);
    ASSERT_EQ(active.size(), 1u);
    auto record = Record::open(options);
    std::vector<uint32_t> first = distinct_ids(1, 300);
    ASSERT_TRUE(record->add(first).error.empty());

    AddResult failed = record->add(distinct_ids(2, 300));
    EXPECT_NE(failed.error.find(std::strerror(error)), std::string::npos) << failed.error;
    EXPECT_NE(failed.error.find("chunk-000000000001.ids"), std::string::npos) << failed.error;
    EXPECT_EQ(record->state(), RecallState::paused_disk);
    EXPECT_EQ(record->stats().last_error, failed.error);
    EXPECT_EQ(record->stats().ids, 300u);
    EXPECT_EQ(testing::read_all_chunks(dir.path()), first) << "disk holds exactly the earlier append";

    std::vector<uint32_t> third = distinct_ids(3, 300);
    EXPECT_TRUE(record->add(third).error.empty());
    EXPECT_EQ(record->state(), RecallState::writing);
    EXPECT_EQ(testing::read_all_chunks(dir.path()), testing::concat({first, {kSeparator}, third}));
}

INSTANTIATE_TEST_SUITE_P(EnospcAndEio, AppendFault, ::testing::Values(ENOSPC, EIO),
                         [](const auto& info) { return info.param == EIO ? "EIO" : "ENOSPC"; });

// kill -9 in the middle of an append, at a known point: the seam writes part
// of the second append, ending inside an id, and kills the process. The next
// writer cuts the torn id and keeps every complete one: all of the first
// append and the whole ids of the second that reached the disk.
TEST(TestSeams, AKillInTheMiddleOfAnAppendLosesOnlyItsTornTail) {
    TempDir dir;
    RecordOptions options = testing::small_options(dir.path());
    std::vector<uint32_t> first = distinct_ids(1, 300);
    std::vector<uint32_t> second = distinct_ids(2, 301);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        RecordOptions seamed_options = options;
        seamed_options.fs = seamed({{kWriteFaultsVariable, "2:SIGKILL"}});
        auto record = Record::open(seamed_options);
        record->add(first);
        record->add(second);
        ::_exit(0);  // not reached: the second add kills the process
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    const std::string chunk = list_chunk_files(dir.path()).front().path;
    const uint64_t torn_bytes = testing::file_size(chunk);
    const uint64_t second_bytes = (second.size() + 1) * 4;  // with its separator
    ASSERT_EQ(torn_bytes, first.size() * 4 + torn_write_bytes(second_bytes));
    ASSERT_NE(torn_bytes % 4, 0u);

    auto record = Record::open(options);
    const uint64_t kept = torn_bytes / 4;
    EXPECT_EQ(record->stats().ids, kept);
    EXPECT_EQ(testing::file_size(chunk), kept * 4);
    const std::vector<uint32_t> on_disk = testing::read_all_chunks(dir.path());
    EXPECT_EQ(slice(on_disk, 0, first.size()), first);
    EXPECT_EQ(on_disk[first.size()], kSeparator);
    EXPECT_EQ(slice(on_disk, first.size() + 1, on_disk.size()), slice(second, 0, kept - first.size() - 1));
}

TEST(TestSeams, TheFreeSpaceFilePausesAndResumesAddsAndAMissingFileIsAFailedProbe) {
    TempDir dir;
    const std::string file = dir.sub("free-bytes");
    std::ofstream(file) << (uint64_t{100} << 30) << "\n";
    RecordOptions options = testing::small_options(dir.sub("record"));
    options.fs = seamed({{kFreeBytesFileVariable, file}});
    auto record = Record::open(options);
    EXPECT_EQ(record->state(), RecallState::writing);
    std::ofstream(file, std::ios::trunc) << ((uint64_t{4} << 30) - 1);
    EXPECT_FALSE(record->add(distinct_ids(1, 100)).accepted);
    EXPECT_EQ(record->state(), RecallState::paused_disk);
    std::ofstream(file, std::ios::trunc) << (uint64_t{4} << 30);
    EXPECT_TRUE(record->add(distinct_ids(2, 100)).accepted);
    EXPECT_EQ(record->stats().adds_skipped, 1u);
    ASSERT_EQ(::unlink(file.c_str()), 0);
    EXPECT_EQ(record->refresh_disk_state(), RecallState::writing) << "unknown is not full";
    EXPECT_NE(record->stats().last_error.find("cannot measure the free space"), std::string::npos)
        << record->stats().last_error;
}

}  // namespace
}  // namespace tf::recall
