// Chunk files: names, order, format, mode, torn tails.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/server_config.h"
#include "recall/chunk_file.h"
#include "recall/identity.h"
#include "recall/state.h"
#include "recall_test_util.h"

namespace tf::recall {
namespace {

using testing::TempDir;

// One chunk file's capacity is 2^20 ids of 4 bytes, the same constant the
// command line uses (docs/recall.md, "On disk").
TEST(ChunkFile, HoldsUpTo1048576IdsOf4BytesAsTheCommandLineSays) {
    EXPECT_EQ(kChunkIds, 1048576u);
    EXPECT_EQ(uint64_t{kChunkIds} * 4, uint64_t{4} << 20);
    static_assert(kChunkIds == config::kRecallChunkIds);
}

// Sorting chunk file names sorts them oldest first (docs/recall.md, "On disk").
TEST(ChunkFile, NamesCarryAZeroPaddedSequenceNumberSoNameOrderIsAge) {
    EXPECT_EQ(chunk_file_name(1), "chunk-000000000001.ids");
    EXPECT_EQ(chunk_file_name(123456789012), "chunk-123456789012.ids");
    EXPECT_LT(chunk_file_name(9), chunk_file_name(10));
    EXPECT_EQ(parse_chunk_file_name("chunk-000000000042.ids"), std::optional<uint64_t>(42));
    EXPECT_EQ(parse_chunk_file_name("chunk-42.ids"), std::nullopt);
    EXPECT_EQ(parse_chunk_file_name("chunk-00000000004x.ids"), std::nullopt);
    EXPECT_EQ(parse_chunk_file_name("identity"), std::nullopt);
    EXPECT_EQ(parse_chunk_file_name("lock"), std::nullopt);
}

TEST(ChunkFile, ListingIsOldestFirstAndIgnoresOtherFiles) {
    TempDir dir;
    for (uint64_t sequence : {10, 2, 1}) {
        ChunkAppender appender;
        std::string error;
        ASSERT_TRUE(appender.open(dir.path() + "/" + chunk_file_name(sequence), 0, &error)) << error;
    }
    std::ofstream(dir.sub("identity")) << "x";
    std::ofstream(dir.sub("notes.txt")) << "x";
    std::vector<ChunkFileInfo> files = list_chunk_files(dir.path());
    ASSERT_EQ(files.size(), 3u);
    EXPECT_EQ(files[0].sequence, 1u);
    EXPECT_EQ(files[1].sequence, 2u);
    EXPECT_EQ(files[2].sequence, 10u);
    EXPECT_EQ(files[2].path, dir.path() + "/chunk-000000000010.ids");
}

// A chunk file contains nothing but little-endian uint32 ids, no header and
// no text, and is created 0600 (docs/recall.md, "On disk" and "Privacy").
TEST(ChunkFile, IsABareArrayOfLittleEndianUint32WithMode0600) {
    TempDir dir;
    std::string path = dir.sub(chunk_file_name(1));
    mode_t old_umask = ::umask(0);  // 0600 must not depend on the umask
    ChunkAppender appender;
    std::string error;
    bool out_of_space = false;
    ASSERT_TRUE(appender.open(path, 0, &error)) << error;
    ::umask(old_umask);
    uint32_t ids[] = {0x01020304u, 7u};
    ASSERT_TRUE(appender.append(ids, 2, &error, &out_of_space)) << error;
    EXPECT_EQ(appender.ids(), 2u);
    EXPECT_EQ(testing::file_mode(path), 0600u);
    std::ifstream in(path, std::ios::binary);
    std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(bytes, (std::vector<unsigned char>{4, 3, 2, 1, 7, 0, 0, 0}));
}

// A file whose size is not a multiple of 4 had a write interrupted; the
// writer trims the partial id when it opens the record (docs/recall.md,
// "On disk", durability).
TEST(ChunkFile, TheWriterCutsATornTailBackToWholeIds) {
    TempDir dir;
    std::string path = dir.sub(chunk_file_name(1));
    {
        std::ofstream out(path, std::ios::binary);
        uint32_t ids[] = {11, 22, 33};
        out.write(reinterpret_cast<const char*>(ids), sizeof ids);
        out.write("\x05\x06", 2);  // half an id
    }
    ASSERT_EQ(::chmod(path.c_str(), 0600), 0);  // a private file, as the server makes them
    uint32_t buffer[8] = {};
    ChunkRead read = read_chunk_file(path, buffer, 8, /*repair=*/true);
    EXPECT_EQ(read.ids, 3u);
    EXPECT_EQ(read.torn_bytes, 2u);
    EXPECT_EQ(testing::file_size(path), 12u);
    EXPECT_EQ(buffer[2], 33u);
}

TEST(ChunkFile, AReaderIgnoresATornTailWithoutTouchingTheFile) {
    TempDir dir;
    std::string path = dir.sub(chunk_file_name(1));
    {
        std::ofstream out(path, std::ios::binary);
        uint32_t ids[] = {11, 22};
        out.write(reinterpret_cast<const char*>(ids), sizeof ids);
        out.write("\x05", 1);
    }
    ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
    uint32_t buffer[8] = {};
    ChunkRead read = read_chunk_file(path, buffer, 8, /*repair=*/false);
    EXPECT_EQ(read.ids, 2u);
    EXPECT_EQ(testing::file_size(path), 9u);
}

TEST(ChunkFile, AVanishedFileReadsAsVanishedNotAsAnError) {
    TempDir dir;
    uint32_t buffer[4];
    EXPECT_TRUE(read_chunk_file(dir.sub(chunk_file_name(3)), buffer, 4, false).vanished);
}

// The state names, `off` included (the default without any Recall flag), as
// GET /v1/recall and the startup line print them (docs/recall.md, "States").
TEST(RecallStateNames, AreTheSixReportedNames) {
    EXPECT_STREQ(to_string(RecallState::off), "off");
    EXPECT_STREQ(to_string(RecallState::writing), "writing");
    EXPECT_STREQ(to_string(RecallState::read_only), "read-only");
    EXPECT_STREQ(to_string(RecallState::following), "following");
    EXPECT_STREQ(to_string(RecallState::paused_disk), "paused-disk");
    EXPECT_STREQ(to_string(RecallState::paused_delete), "paused-delete");
    EXPECT_FALSE(owns_record(RecallState::read_only));
    EXPECT_FALSE(owns_record(RecallState::following));
    EXPECT_TRUE(owns_record(RecallState::paused_delete));
}

}  // namespace
}  // namespace tf::recall
