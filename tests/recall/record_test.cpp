// The record on real files: directory, files, adding, lookups, eviction,
// memory, the free-space pause, read-only, restart.
#include <gtest/gtest.h>
#include <malloc.h>

#include <thread>

#include "recall/record.h"
#include "recall_test_util.h"

namespace tf::recall {
namespace {

using testing::concat;
using testing::distinct_ids;
using testing::slice;
using testing::TempDir;

// Token ids decode back into the conversations they came from, so the
// record's directory (and any parent it creates) is 0700 and every file in
// it 0600: only this user can read it (docs/recall.md, "On disk" and
// "Privacy").
TEST(RecordFiles, DirectoryIs0700AndEveryFileIn0600) {
    TempDir dir;
    std::string path = dir.sub("nested/record");
    auto record = Record::open(testing::small_options(path));
    record->add(distinct_ids(1, 3000));  // three chunk files of 1024 ids
    EXPECT_EQ(testing::file_mode(path), 0700u);
    EXPECT_EQ(testing::file_mode(dir.sub("nested")), 0700u);
    std::vector<ChunkFileInfo> files = list_chunk_files(path);
    ASSERT_EQ(files.size(), 3u);
    for (const ChunkFileInfo& file : files) EXPECT_EQ(testing::file_mode(file.path), 0600u) << file.path;
    EXPECT_EQ(testing::file_mode(path + "/identity"), 0600u);
    EXPECT_EQ(testing::file_mode(path + "/lock"), 0600u);
}

TEST(RecordFiles, ChunkFilesAreNamedInOrderOfAgeFromOne) {
    TempDir dir;
    auto record = Record::open(testing::small_options(dir.path()));
    record->add(distinct_ids(1, 2500));
    std::vector<ChunkFileInfo> files = list_chunk_files(dir.path());
    ASSERT_EQ(files.size(), 3u);
    EXPECT_EQ(files[0].path, dir.path() + "/chunk-000000000001.ids");
    EXPECT_EQ(files[1].path, dir.path() + "/chunk-000000000002.ids");
    EXPECT_EQ(files[2].path, dir.path() + "/chunk-000000000003.ids");
    EXPECT_EQ(files[0].bytes, 1024u * 4);  // full before the next begins
    EXPECT_EQ(files[1].bytes, 1024u * 4);
}

// A chunk file stores nothing but the ids that were added, with one
// separator id between two appended runs; no text ever reaches the disk
// (docs/recall.md, "On disk").
TEST(RecordFiles, ChunkFilesHoldTheAddedIdsAndSegmentSeparatorsOnly) {
    TempDir dir;
    auto record = Record::open(testing::small_options(dir.path()));
    std::vector<uint32_t> first = distinct_ids(1, 300);
    std::vector<uint32_t> second = distinct_ids(2, 200);
    record->add(first);
    record->add(second);
    EXPECT_EQ(testing::read_all_chunks(dir.path()), concat({first, {kSeparator}, second}));
    // An empty lock: it holds no ids.
    EXPECT_EQ(testing::file_size(dir.path() + "/lock"), 0u);
}

// The writing server keeps an exclusive flock on the empty `lock` file and
// lets go of it when the record closes (docs/recall.md, "On disk").
TEST(RecordFiles, TheWriterHoldsAnExclusiveFlockOnLock) {
    TempDir dir;
    auto record = Record::open(testing::small_options(dir.path()));
    DirectoryLock other;
    EXPECT_EQ(other.try_lock(dir.path()), DirectoryLock::Outcome::held_elsewhere);
    record.reset();
    EXPECT_EQ(other.try_lock(dir.path()), DirectoryLock::Outcome::held);
}

// The point of the record: ids the server read and wrote come back as drafts,
// so a prompt seen before finds the reply that followed it as the
// continuation to copy (docs/recall.md, "Flags").
TEST(RecordLookup, ARepeatedPromptFindsItsEarlierReplyAsTheContinuation) {
    TempDir dir;
    auto record = Record::open(testing::small_options(dir.path()));
    std::vector<uint32_t> prompt = distinct_ids(1, 400);
    std::vector<uint32_t> reply = distinct_ids(2, 150);
    // A request adds its not-yet-seen prompt and, once finished, its reply as
    // a single run, so the prompt's last ids lead straight into the reply
    // (docs/recall.md, "On disk").
    AddResult added = record->add(concat({prompt, reply}));
    EXPECT_TRUE(added.accepted);
    EXPECT_EQ(added.ids_written, 550u);
    Match match = record->lookup(slice(prompt, 300, 400), 32);
    EXPECT_EQ(match.length, 100u);
    EXPECT_EQ(match.continuation, slice(reply, 0, 32));
}

// Dedupe: a stretch of at least 128 ids that is already in the record is
// skipped, so repeating a request writes nothing new (docs/recall.md,
// "On disk").
TEST(RecordDedupe, ARepeated10kIdRequestAddsNothingTheSecondTime) {
    TempDir dir;
    auto record = Record::open(testing::small_options(dir.path(), 4096, 8));
    std::vector<uint32_t> request = distinct_ids(7, 10000);
    EXPECT_EQ(record->add(request).ids_written, 10000u);
    uint64_t disk_bytes = record->stats().disk_bytes;
    std::vector<uint32_t> on_disk = testing::read_all_chunks(dir.path());
    AddResult again = record->add(request);
    EXPECT_TRUE(again.accepted);
    EXPECT_EQ(again.ids_written, 0u);
    EXPECT_EQ(again.ids_held, 10000u);
    EXPECT_EQ(record->stats().disk_bytes, disk_bytes);
    EXPECT_EQ(testing::read_all_chunks(dir.path()), on_disk);
}

// Without --recall-gib the record may use 64 MiB of disk (1/16 GiB), which
// is sixteen full chunk files (docs/recall.md, "Flags" and "Sizing").
TEST(RecordEviction, TheDefaultCapacityIs64MiBOfChunkFiles) {
    EXPECT_EQ(RecordOptions{}.capacity_bytes, uint64_t{64} << 20);
    EXPECT_EQ(RecordOptions{}.capacity_bytes / (uint64_t{4} * kChunkIds), 16u);
}

// Eviction: when the chunk files outgrow the capacity, the oldest file is
// removed first. With full-size chunks and room for two, 3M ids leave only
// the newest two (docs/recall.md, "Sizing").
TEST(RecordEviction, PastTheCapacityTheOldestChunkFileIsDeletedWithRealChunks) {
    TempDir dir;
    RecordOptions options = testing::small_options(dir.path(), kChunkIds, 2);
    auto record = Record::open(options);
    std::vector<std::vector<uint32_t>> requests;
    for (uint32_t i = 0; i < 300; ++i) {
        requests.push_back(distinct_ids(100 + i, 10000));
        AddResult added = record->add(requests.back());
        ASSERT_TRUE(added.accepted);
        ASSERT_EQ(added.ids_written, 10000u);
    }
    std::vector<ChunkFileInfo> files = list_chunk_files(dir.path());
    ASSERT_EQ(files.size(), 2u);
    EXPECT_EQ(files[0].sequence, 2u);
    EXPECT_EQ(files[1].sequence, 3u);
    EXPECT_EQ(files[0].bytes, uint64_t{4} << 20);  // a full chunk: 2^20 ids of 4 bytes
    RecordStats stats = record->stats();
    EXPECT_EQ(stats.chunks, 2u);
    EXPECT_EQ(stats.chunks_evicted, 1u);
    EXPECT_LE(stats.disk_bytes, options.capacity_bytes);
    EXPECT_EQ(stats.disk_bytes, files[0].bytes + files[1].bytes);
    // The oldest ids went first, and no longer match.
    EXPECT_EQ(record->lookup(slice(requests[0], 0, 100), 8).length, 0u);
    EXPECT_EQ(record->lookup(slice(requests[50], 0, 100), 8).length, 0u);
    EXPECT_EQ(record->lookup(slice(requests[299], 0, 100), 8).continuation, slice(requests[299], 100, 108));
    EXPECT_EQ(record->lookup(slice(requests[110], 0, 100), 8).continuation, slice(requests[110], 100, 108));
}

TEST(RecordEviction, ChunksGoOldestFirstOneAtATime) {
    TempDir dir;
    auto record = Record::open(testing::small_options(dir.path(), 1024, 3));
    std::vector<uint64_t> evicted_at;
    for (uint32_t i = 0; i < 12; ++i) {
        record->add(distinct_ids(i + 1, 500));
        std::vector<ChunkFileInfo> files = list_chunk_files(dir.path());
        ASSERT_LE(files.size(), 3u);
        for (size_t k = 1; k < files.size(); ++k) EXPECT_EQ(files[k].sequence, files[k - 1].sequence + 1);
    }
    std::vector<ChunkFileInfo> files = list_chunk_files(dir.path());
    EXPECT_EQ(files.back().sequence, files.front().sequence + 2);
    EXPECT_EQ(record->stats().chunks_evicted, files.front().sequence - 1);
}

TEST(RecordEviction, AReopenWithASmallerCapacityDeletesTheOldestChunks) {
    TempDir dir;
    Record::open(testing::small_options(dir.path(), 1024, 8))->add(distinct_ids(1, 5000));
    ASSERT_EQ(list_chunk_files(dir.path()).size(), 5u);
    auto record = Record::open(testing::small_options(dir.path(), 1024, 2));
    std::vector<ChunkFileInfo> files = list_chunk_files(dir.path());
    ASSERT_EQ(files.size(), 2u);
    EXPECT_EQ(files[0].sequence, 4u);
    EXPECT_EQ(record->stats().chunks, 2u);
}

// Memory: a chunk costs its full 8 MiB as soon as it holds one id, so even a
// tiny record costs 8 MiB, on top of a key table whose size depends only on
// the capacity (8 MiB for the default) (docs/recall.md, "Sizing").
TEST(RecordMemory, EachChunkTakes8MiBFromItsFirstIdPlusAKeyTableOf8MiBAtTheDefault) {
    TempDir dir;
    RecordOptions options = testing::small_options(dir.path(), kChunkIds, 16);
    ASSERT_EQ(options.capacity_bytes, kDefaultCapacityBytes);
    auto record = Record::open(options);
    RecordStats empty = record->stats();
    EXPECT_EQ(empty.key_table_bytes, uint64_t{8} << 20);
    EXPECT_EQ(empty.memory_bytes, uint64_t{8} << 20);  // no chunk yet
    EXPECT_EQ(empty.chunks, 0u);

#if !defined(__SANITIZE_ADDRESS__)  // sanitizers replace malloc: mallinfo2 sees nothing
    struct mallinfo2 before = ::mallinfo2();
#endif
    record->add(distinct_ids(1, 20));  // a short record
    RecordStats short_record = record->stats();
    EXPECT_EQ(short_record.chunks, 1u);
    EXPECT_EQ(short_record.chunk_memory_bytes, uint64_t{8} << 20);
    EXPECT_EQ(short_record.memory_bytes, uint64_t{16} << 20);
#if !defined(__SANITIZE_ADDRESS__)
    // What malloc handed out grew by the 8 MiB reported (plus small change).
    struct mallinfo2 after = ::mallinfo2();
    const int64_t grown = static_cast<int64_t>(after.uordblks + after.hblkhd) -
                          static_cast<int64_t>(before.uordblks + before.hblkhd);
    EXPECT_GE(grown, int64_t{8} << 20);
    EXPECT_LT(grown, (int64_t{8} << 20) + (64 << 10));
#endif
    record->add(distinct_ids(2, kChunkIds));  // fills the first chunk and starts a second
    EXPECT_EQ(record->stats().memory_bytes, uint64_t{8} * 2 * (1 << 20) + (uint64_t{8} << 20));
}

TEST(RecordMemory, TheKeyTableIsFixedByTheCapacity) {
    TempDir dir;
    auto record = Record::open(testing::small_options(dir.path(), kChunkIds, 128));  // 512 MiB
    EXPECT_EQ(record->stats().key_table_bytes, uint64_t{64} << 20);
    EXPECT_EQ(record->stats().memory_bytes, uint64_t{64} << 20);
}

// Free-space pause: with less than 4 GiB free, adds are refused while
// lookups keep working, and adds resume once space is back (docs/recall.md,
// "Sizing" and "States").
TEST(RecordDiskPause, UnderFourGiBFreeAddsStopLookupsGoOnAndAddsResumeWhenSpaceReturns) {
    TempDir dir;
    auto free_bytes = std::make_shared<uint64_t>(uint64_t{5} << 30);
    RecordOptions options = testing::small_options(dir.path());
    ASSERT_EQ(options.min_free_bytes, uint64_t{4} << 30);
    options.fs.free_bytes = [free_bytes](const std::string&) -> std::optional<uint64_t> { return *free_bytes; };
    auto record = Record::open(options);
    std::vector<uint32_t> before = distinct_ids(1, 300);
    record->add(before);

    *free_bytes = (uint64_t{4} << 30) - 1;
    EXPECT_EQ(record->refresh_disk_state(), RecallState::paused_disk);
    AddResult refused = record->add(distinct_ids(2, 300));
    EXPECT_FALSE(refused.accepted);
    EXPECT_EQ(refused.state, RecallState::paused_disk);
    EXPECT_EQ(record->stats().ids, 300u);
    EXPECT_EQ(record->lookup(slice(before, 0, 50), 4).continuation, slice(before, 50, 54));  // serving goes on

    *free_bytes = uint64_t{4} << 30;
    std::vector<uint32_t> after = distinct_ids(3, 300);
    AddResult resumed = record->add(after);  // add() probes too
    EXPECT_TRUE(resumed.accepted);
    EXPECT_EQ(record->state(), RecallState::writing);
    EXPECT_EQ(record->lookup(slice(after, 0, 50), 4).continuation, slice(after, 50, 54));
}

TEST(RecordDiskPause, ARecordOpenedOnAFullDiskStartsPaused) {
    TempDir dir;
    RecordOptions options = testing::small_options(dir.path());
    options.fs.free_bytes = [](const std::string&) -> std::optional<uint64_t> { return uint64_t{1} << 30; };
    EXPECT_EQ(Record::open(options)->state(), RecallState::paused_disk);
}

TEST(RecordDiskPause, TheRealProbeMeasuresTheRecordsFileSystem) {
    TempDir dir;
    std::optional<uint64_t> free_bytes = FsOps::real().free_bytes(dir.path());
    ASSERT_TRUE(free_bytes);
    EXPECT_GT(*free_bytes, 0u);
    EXPECT_FALSE(FsOps::real().free_bytes(dir.sub("missing/deeper")));
}

// --recall-read-only: lookups still draft from the record, but nothing is
// ever written to it (docs/recall.md, "Flags").
TEST(RecordReadOnly, DraftsFromTheRecordAndAddsNothing) {
    TempDir dir;
    std::vector<uint32_t> ids = distinct_ids(1, 300);
    Record::open(testing::small_options(dir.path()))->add(ids);
    std::vector<uint32_t> on_disk = testing::read_all_chunks(dir.path());
    RecordOptions options = testing::small_options(dir.path());
    options.read_only = true;
    auto record = Record::open(options);
    EXPECT_EQ(record->state(), RecallState::read_only);
    EXPECT_EQ(record->lookup(slice(ids, 0, 100), 8).continuation, slice(ids, 100, 108));
    EXPECT_FALSE(record->add(distinct_ids(2, 300)).accepted);
    EXPECT_EQ(testing::read_all_chunks(dir.path()), on_disk);
}

// Benchmarks are meant to run with recall off or read-only on an empty
// record, so a read-only record on a directory that does not exist must be
// empty and create nothing (docs/recall.md, "Flags").
TEST(RecordReadOnly, OnAMissingDirectoryIsAnEmptyRecordThatCreatesNothing) {
    TempDir dir;
    RecordOptions options = testing::small_options(dir.sub("never-made"));
    options.read_only = true;
    auto record = Record::open(options);
    EXPECT_EQ(record->state(), RecallState::read_only);
    EXPECT_EQ(record->stats().ids, 0u);
    EXPECT_FALSE(testing::exists(dir.sub("never-made")));
}

// The record survives a restart: reopening the directory restores lookups,
// dedupe and appends (docs/recall.md, "On disk").
TEST(RecordRestart, AReopenedRecordFindsWhatTheLastServerAdded) {
    TempDir dir;
    std::vector<uint32_t> a = distinct_ids(1, 2000);
    std::vector<uint32_t> b = distinct_ids(2, 700);
    {
        auto record = Record::open(testing::small_options(dir.path()));
        record->add(a);
        record->add(b);
    }
    auto record = Record::open(testing::small_options(dir.path()));
    RecordStats stats = record->stats();
    EXPECT_EQ(stats.ids, 2701u);
    EXPECT_EQ(stats.token_ids, 2700u);
    EXPECT_EQ(record->lookup(slice(a, 900, 1100), 16).continuation, slice(a, 1100, 1116));  // across chunks
    EXPECT_EQ(record->lookup(slice(b, 0, 40), 16).continuation, slice(b, 40, 56));
    EXPECT_EQ(record->lookup(slice(a, 1900, 2000), 16).length, 0u);  // a's end stays a segment end
    // Appends go on in the newest chunk, and dedupe knows the old ids.
    EXPECT_EQ(record->add(a).ids_written, 0u);
    std::vector<uint32_t> c = distinct_ids(3, 100);
    record->add(c);
    EXPECT_EQ(list_chunk_files(dir.path()).size(), 3u);
    EXPECT_EQ(record->lookup(slice(c, 0, 40), 4).continuation, slice(c, 40, 44));
}

// Removing the whole directory while no server has it open is a full reset:
// the next open starts from an empty record (docs/recall.md, "DELETE").
TEST(RecordRestart, DeletingTheDirectoryWhileNoServerUsesItRemovesEverything) {
    TempDir dir;
    std::string path = dir.sub("record");
    std::vector<uint32_t> ids = distinct_ids(1, 300);
    Record::open(testing::small_options(path))->add(ids);
    std::filesystem::remove_all(path);
    auto record = Record::open(testing::small_options(path));
    EXPECT_EQ(record->state(), RecallState::writing);
    EXPECT_EQ(record->stats().ids, 0u);
    EXPECT_EQ(record->lookup(slice(ids, 0, 50), 4).length, 0u);
}

// What the report is built from: the state, bytes on disk and in memory,
// the copies offered and how many of their tokens landed (docs/recall.md,
// "GET /v1/recall" and "States").
TEST(RecordStatsReport, ReportsStateSizesOnDiskAndInMemoryCopiesOfferedAndTokensLanded) {
    TempDir dir;
    auto record = Record::open(testing::small_options(dir.path()));
    record->add(distinct_ids(1, 1500));
    record->offers().record_outcome(40, 10, 7);
    record->offers().record_outcome(20, 8, 0);
    RecordStats stats = record->stats();
    EXPECT_EQ(stats.state, RecallState::writing);
    EXPECT_EQ(stats.disk_bytes, 1500u * 4);
    EXPECT_EQ(stats.memory_bytes, 2 * stats.chunk_memory_bytes + stats.key_table_bytes);
    EXPECT_EQ(stats.landing.copies_offered, 2u);
    EXPECT_EQ(stats.landing.tokens_drafted, 18u);
    EXPECT_EQ(stats.landing.tokens_landed, 7u);
}

TEST(RecordStatsReport, TheStartupLineStatesStateDirectoryAndSizes) {
    TempDir dir;
    auto record = Record::open(testing::small_options(dir.path(), kChunkIds, 16));
    EXPECT_EQ(record->summary(), "writing, " + dir.path() + ": 0 B on disk in 0 chunks, 8.0 MiB in memory");
    record->add(distinct_ids(1, 1535));
    EXPECT_EQ(record->summary(), "writing, " + dir.path() + ": 6.0 KiB on disk in 1 chunk, 16.0 MiB in memory");
}

// Record's header: lookup() runs concurrently with itself and with add().
TEST(RecordThreads, LookupsRunWhileAWriterAdds) {
    TempDir dir;
    auto record = Record::open(testing::small_options(dir.path(), 1024, 64));
    std::vector<uint32_t> stable = distinct_ids(1, 500);
    record->add(stable);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> hits{0};
    std::vector<std::thread> readers;
    for (int r = 0; r < 3; ++r) {
        readers.emplace_back([&] {
            while (!stop) {
                if (record->lookup(slice(stable, 100, 200), 8).continuation == slice(stable, 200, 208)) ++hits;
            }
        });
    }
    for (uint32_t i = 0; i < 200; ++i) record->add(distinct_ids(10 + i, 200));
    // Readers also run once the writer is done, so some lookups surely ran.
    while (hits.load() < 30) std::this_thread::yield();
    stop = true;
    for (std::thread& t : readers) t.join();
    EXPECT_EQ(record->stats().lookups, record->stats().lookup_hits);
}

// The record's contents never leave the machine (docs/recall.md, "Privacy").
// recall/ reads and writes local files only: none of its sources may use
// sockets, HTTP or actors (those live in http/ and actors/).
TEST(RecordStaysLocal, NoRecallSourceUsesTheNetwork) {
    const std::string recall_dir = std::string(TF_SOURCE_DIR_FOR_TESTS) + "/recall";
    size_t sources = 0;
    for (const auto& entry : std::filesystem::directory_iterator(recall_dir)) {
        std::ifstream in(entry.path());
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        ++sources;
        for (const char* network : {"sys/socket.h", "netinet/", "netdb.h", "socket(", "connect(", "sendto(", "curl",
                                    "boost/", "caf/", "nlohmann", "http/"}) {
            EXPECT_EQ(text.find(network), std::string::npos) << entry.path() << " mentions " << network;
        }
    }
    EXPECT_GE(sources, 10u);
}

}  // namespace
}  // namespace tf::recall

namespace tf::recall {
namespace {

// Identities changed once (tokenizer/identity.h, v1 to v2). A record written
// under this tokenizer's v1 digest is still its own: the writer rewrites
// the identity file to the new digest and keeps every id; a read-only
// server uses it as it is and changes nothing.
TEST(RecordIdentityUpgrade, ARecordUnderTheTokenizersOldDigestIsKeptAndItsIdentityRewritten) {
    TempDir dir;
    const std::vector<uint32_t> ids = distinct_ids(1, 2000);
    RecordOptions old_server = testing::small_options(dir.path());
    old_server.tokenizer = {"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 151936};
    Record::open(old_server)->add(ids);

    RecordOptions reader = testing::small_options(dir.path());
    reader.legacy_tokenizer = old_server.tokenizer;
    reader.read_only = true;
    EXPECT_EQ(Record::open(reader)->stats().token_ids, 2000u);
    EXPECT_EQ(read_identity(dir.path())->tokenizer, old_server.tokenizer) << "a read-only server rewrote it";

    RecordOptions writer = testing::small_options(dir.path());
    writer.legacy_tokenizer = old_server.tokenizer;
    auto record = Record::open(writer);
    EXPECT_EQ(record->stats().token_ids, 2000u);
    EXPECT_EQ(record->lookup(slice(ids, 100, 140), 8).continuation, slice(ids, 140, 148));
    const std::optional<RecordIdentity> now = read_identity(dir.path());
    EXPECT_EQ(now->tokenizer, writer.tokenizer);
    EXPECT_EQ(now->model, "test-model");

    // Another tokenizer's record is refused as before, legacy digest or not.
    RecordOptions stranger = testing::small_options(dir.path());
    stranger.tokenizer = {"ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100", 151936};
    stranger.legacy_tokenizer = old_server.tokenizer;
    record.reset();
    EXPECT_THROW(Record::open(stranger), RecallError);
}

TEST(RecordIdentityUpgrade, WithoutRecallDirTheOldDigestsDefaultDirectoryStaysInUse) {
    TempDir home;
    RecordOptions old_server = testing::small_options("");
    old_server.home = home.path();
    old_server.tokenizer = {"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 151936};
    const std::string old_dir = Record::default_directory(old_server.tokenizer, home.path());
    Record::open(old_server)->add(distinct_ids(2, 500));

    RecordOptions upgraded = testing::small_options("");
    upgraded.home = home.path();
    upgraded.legacy_tokenizer = old_server.tokenizer;
    auto record = Record::open(upgraded);
    EXPECT_EQ(record->dir(), old_dir);
    EXPECT_EQ(record->stats().token_ids, 500u);
    EXPECT_FALSE(testing::exists(Record::default_directory(upgraded.tokenizer, home.path())));
}

}  // namespace
}  // namespace tf::recall
