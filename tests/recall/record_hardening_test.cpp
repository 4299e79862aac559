// A hardened record directory (issue 14, item 5): links, other users' files
// and modes open to group or others are refused with a message naming the
// path and the fix, before anything in the record is touched; modes do not
// depend on the umask; an edited identity never turns into a new record.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "recall/private_files.h"
#include "recall/record.h"
#include "recall_test_util.h"

namespace tf::recall {
namespace {

using testing::distinct_ids;
using testing::TempDir;

constexpr uid_t kNobody = 65534;

// Record::open's refusal message, or "" when it opened.
std::string refusal(const RecordOptions& options) {
    try {
        Record::open(options);
    } catch (const RecallError& error) {
        return error.what();
    }
    return "";
}

void expect_mentions(const std::string& message, std::initializer_list<std::string> needles) {
    EXPECT_FALSE(message.empty()) << "the record opened";
    for (const std::string& needle : needles) {
        EXPECT_NE(message.find(needle), std::string::npos) << "no '" << needle << "' in: " << message;
    }
}

// A writer's record of two chunk files in `dir`, closed again.
std::string make_record(const std::string& dir) {
    Record::open(testing::small_options(dir))->add(distinct_ids(1, 1500));
    return list_chunk_files(dir).front().path;
}

class Umask {
   public:
    explicit Umask(mode_t mask) : old_(::umask(mask)) {}
    ~Umask() { ::umask(old_); }

   private:
    mode_t old_;
};

TEST(AccessProblem, AcceptsAPrivateDirectoryAndFileOfTheServersUser) {
    EXPECT_EQ(access_problem(S_IFDIR | 0700, 1000, 1000, RecordEntry::directory, "/r"), std::nullopt);
    EXPECT_EQ(access_problem(S_IFREG | 0600, 1000, 1000, RecordEntry::file, "/r"), std::nullopt);
    EXPECT_EQ(access_problem(S_IFREG | 0400, 1000, 1000, RecordEntry::file, "/r"), std::nullopt);
}

TEST(AccessProblem, NamesALinkAnotherOwnerAndGroupOrOtherBitsWithTheFix) {
    EXPECT_NE(access_problem(S_IFLNK | 0777, 1000, 1000, RecordEntry::directory, "/r")->find("symbolic link"),
              std::string::npos);
    const std::string owner = *access_problem(S_IFREG | 0600, kNobody, 1000, RecordEntry::file, "/r");
    EXPECT_NE(owner.find("uid 65534"), std::string::npos) << owner;
    EXPECT_NE(owner.find("uid 1000"), std::string::npos) << owner;
    const std::string group = *access_problem(S_IFDIR | 0750, 1000, 1000, RecordEntry::directory, "/r");
    EXPECT_NE(group.find("0750"), std::string::npos) << group;
    EXPECT_NE(group.find("chmod 700 /r"), std::string::npos) << group;
    const std::string other = *access_problem(S_IFREG | 0604, 1000, 1000, RecordEntry::file, "/r");
    EXPECT_NE(other.find("chmod 600 /r"), std::string::npos) << other;
    EXPECT_NE(access_problem(S_IFDIR | 0700, 1000, 1000, RecordEntry::file, "/r")->find("not a regular file"),
              std::string::npos);
}

TEST(HardenedDirectory, ARecordDirectoryThatIsASymlinkIsRefusedNamingIt) {
    TempDir dir;
    make_record(dir.sub("real"));
    ASSERT_EQ(::symlink(dir.sub("real").c_str(), dir.sub("link").c_str()), 0);
    RecordOptions options = testing::small_options(dir.sub("link"));
    expect_mentions(refusal(options), {dir.sub("link"), "symbolic link"});
    options.read_only = true;
    expect_mentions(refusal(options), {dir.sub("link"), "symbolic link"});
    // A link to nowhere is not followed to create the directory either.
    ASSERT_EQ(::symlink(dir.sub("nowhere").c_str(), dir.sub("dangling").c_str()), 0);
    expect_mentions(refusal(testing::small_options(dir.sub("dangling"))), {"symbolic link"});
    EXPECT_FALSE(testing::exists(dir.sub("nowhere")));
}

TEST(HardenedDirectory, ADirectoryWithGroupOrOtherBitsIsRefusedAndLeftUntouched) {
    TempDir dir;
    const std::string record = dir.sub("record");
    ASSERT_EQ(::mkdir(record.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(record.c_str(), 0755), 0);
    expect_mentions(refusal(testing::small_options(record)), {record, "0755", "chmod 700"});
    EXPECT_FALSE(testing::exists(record + "/lock")) << "nothing is created in a refused directory";
    EXPECT_FALSE(testing::exists(record + "/identity"));
    EXPECT_EQ(testing::file_mode(record), 0755u) << "the mode is not silently repaired";
}

TEST(HardenedDirectory, AChunkFileThatIsASymlinkIsRefusedNamingIt) {
    TempDir dir;
    const std::string record = dir.sub("record");
    const std::string chunk = make_record(record);
    const std::string target = dir.sub("elsewhere.ids");
    ASSERT_EQ(::rename(chunk.c_str(), target.c_str()), 0);
    ASSERT_EQ(::symlink(target.c_str(), chunk.c_str()), 0);
    const uint64_t bytes = testing::file_size(target);
    expect_mentions(refusal(testing::small_options(record)), {chunk, "symbolic link"});
    RecordOptions read_only = testing::small_options(record);
    read_only.read_only = true;
    expect_mentions(refusal(read_only), {chunk, "symbolic link"});
    EXPECT_EQ(testing::file_size(target), bytes);
}

TEST(HardenedDirectory, AChunkFileWithGroupOrOtherBitsIsRefusedBeforeAnyRepair) {
    TempDir dir;
    const std::string record = dir.sub("record");
    const std::string chunk = make_record(record);
    const std::string newest = list_chunk_files(record).back().path;
    { std::ofstream(newest, std::ios::app | std::ios::binary).write("\x01\x02", 2); }  // a torn id to cut
    const uint64_t torn_size = testing::file_size(newest);
    ASSERT_EQ(::chmod(chunk.c_str(), 0644), 0);
    expect_mentions(refusal(testing::small_options(record)), {chunk, "0644", "chmod 600"});
    EXPECT_EQ(testing::file_size(newest), torn_size) << "a refused record is left as it was found";
}

TEST(HardenedDirectory, AnIdentityThatIsALinkOrOpenToOthersIsRefused) {
    TempDir dir;
    const std::string record = dir.sub("record");
    make_record(record);
    const std::string identity = record + "/identity";
    ASSERT_EQ(::chmod(identity.c_str(), 0664), 0);
    expect_mentions(refusal(testing::small_options(record)), {identity, "0664"});
    ASSERT_EQ(::rename(identity.c_str(), dir.sub("identity-copy").c_str()), 0);
    ASSERT_EQ(::chmod(dir.sub("identity-copy").c_str(), 0600), 0);
    ASSERT_EQ(::symlink(dir.sub("identity-copy").c_str(), identity.c_str()), 0);
    expect_mentions(refusal(testing::small_options(record)), {identity, "symbolic link"});
}

TEST(HardenedDirectory, ADirectoryOwnedByAnotherUserIsRefused) {
    if (::geteuid() != 0) GTEST_SKIP() << "only root can give a directory to another user";
    TempDir dir;
    const std::string record = dir.sub("record");
    make_record(record);
    ASSERT_EQ(::chown(record.c_str(), kNobody, kNobody), 0);
    expect_mentions(refusal(testing::small_options(record)), {record, "uid 65534", "uid 0"});
    RecordOptions read_only = testing::small_options(record);
    read_only.read_only = true;
    expect_mentions(refusal(read_only), {record, "uid 65534"});
}

TEST(HardenedDirectory, AChunkFileOrIdentityOwnedByAnotherUserIsRefused) {
    if (::geteuid() != 0) GTEST_SKIP() << "only root can give a file to another user";
    TempDir dir;
    const std::string record = dir.sub("record");
    const std::string chunk = make_record(record);
    ASSERT_EQ(::chown(chunk.c_str(), kNobody, kNobody), 0);
    expect_mentions(refusal(testing::small_options(record)), {chunk, "uid 65534"});
    ASSERT_EQ(::chown(chunk.c_str(), 0, 0), 0);
    ASSERT_EQ(::chown((record + "/identity").c_str(), kNobody, kNobody), 0);
    expect_mentions(refusal(testing::small_options(record)), {record + "/identity", "uid 65534"});
}

class UmaskModes : public ::testing::TestWithParam<mode_t> {};

TEST_P(UmaskModes, DirectoriesAre0700AndFiles0600WhateverTheUmask) {
    Umask umask(GetParam());
    TempDir dir;
    const std::string record = dir.sub("parent/record");
    auto opened = Record::open(testing::small_options(record));
    opened->add(distinct_ids(1, 1500));  // two chunk files
    EXPECT_EQ(testing::file_mode(dir.sub("parent")), 0700u);
    EXPECT_EQ(testing::file_mode(record), 0700u);
    for (const ChunkFileInfo& file : list_chunk_files(record)) EXPECT_EQ(testing::file_mode(file.path), 0600u);
    EXPECT_EQ(testing::file_mode(record + "/identity"), 0600u);
    EXPECT_EQ(testing::file_mode(record + "/lock"), 0600u);
    opened.reset();
    EXPECT_EQ(Record::open(testing::small_options(record))->stats().ids, 1500u) << "and it opens again";
}

INSTANTIATE_TEST_SUITE_P(Umask000And077, UmaskModes, ::testing::Values(mode_t{0000}, mode_t{0077}),
                         [](const auto& info) { return info.param == 0 ? "Umask000" : "Umask077"; });

// "identity missing or edited -> a clear refusal, never a silent new record":
// each edit is refused, and the chunk files and identity stay as they were.
TEST(HardenedIdentity, AnEditedIdentityIsRefusedAndNothingIsReplaced) {
    TempDir dir;
    const std::string record = dir.sub("record");
    make_record(record);
    const std::string identity = record + "/identity";
    const std::string original = [&] {
        std::ifstream in(identity);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }();
    auto edited = [&](const std::string& from, const std::string& to) {
        std::string text = original;
        text.replace(text.find(from), from.size(), to);
        std::ofstream(identity, std::ios::trunc) << text;
        return refusal(testing::small_options(record));
    };
    expect_mentions(edited("0123456789abcdef0123", "aaaaaaaaaaaaaaaaaaaa"), {record, "was written by tokenizer"});
    expect_mentions(edited("vocab_size 32000", "vocab_size 32001"), {"32001", "32000"});
    expect_mentions(edited("format 1", "format 2"), {identity, "corrupt"});
    expect_mentions(edited("vocab_size 32000\n", ""), {identity, "vocab_size"});
    expect_mentions(edited("tokenizer_sha256", "tokenizer_sha"), {identity, "corrupt"});
    std::ofstream(identity, std::ios::trunc) << original;
    auto reopened = Record::open(testing::small_options(record));
    EXPECT_EQ(reopened->stats().ids, 1500u) << "no edit cost a single id";
}

TEST(HardenedIdentity, AMissingIdentityBesideChunkFilesIsRefusedEvenReadOnly) {
    TempDir dir;
    const std::string record = dir.sub("record");
    make_record(record);
    ASSERT_EQ(::unlink((record + "/identity").c_str()), 0);
    RecordOptions options = testing::small_options(record);
    expect_mentions(refusal(options), {record, "no identity"});
    EXPECT_FALSE(testing::exists(record + "/identity")) << "no new identity is written over old chunk files";
    options.read_only = true;
    expect_mentions(refusal(options), {record, "no identity"});
}

}  // namespace
}  // namespace tf::recall
