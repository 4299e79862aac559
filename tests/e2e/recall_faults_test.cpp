// Disk faults against the real record and the real binary (issue 14, item 4),
// injected through the test seams of recall/test_seams.h: a chunk write that
// fails with ENOSPC or EIO, a kill -9 in the middle of an append, and a disk
// with under 4 GiB free. Requests are answered throughout, and nothing that
// was on disk before a fault is lost.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "recall_report.h"
#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kWriteFaults = "TF_TEST_RECALL_WRITE_FAULTS";
constexpr const char* kFreeBytesFile = "TF_TEST_RECALL_FREE_BYTES_FILE";

// Sets an environment variable for the servers started while it lives (they
// inherit it at fork).
class ScopedEnv {
public:
    ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
    ~ScopedEnv() { ::unsetenv(name_); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
};

// Three prompts of fresh text, each long enough (over 16 ids) that its run
// is written whatever the reply, so write numbers are the requests' order.
const std::string kFirst = "def first(items):\n    \"\"\"Return the first item of a list, or None when the list is empty.\"\"\"\n";
const std::string kSecond = "class Second:\n    \"\"\"A second class that holds a name and a count of visits.\"\"\"\n";
const std::string kThird = "import os\n\n# Print every file name under the current working directory, sorted.\n";

std::string completion(const std::string& prompt) {
    return json{{"model", "tinycode"}, {"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}}.dump();
}

void expect_reply(const ServerProcess& server, const std::string& prompt) {
    const Response r = server.post("/v1/completions", completion(prompt));
    EXPECT_EQ(r.status, 200) << r.body;
}

// The bytes of every chunk file, oldest first.
std::string chunk_bytes(const std::string& dir) {
    std::vector<fs::path> chunks;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().filename().string().rfind("chunk-", 0) == 0) chunks.push_back(entry.path());
    }
    std::sort(chunks.begin(), chunks.end());
    std::string bytes;
    for (const fs::path& chunk : chunks) {
        std::ifstream in(chunk, std::ios::binary);
        bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return bytes;
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.compare(0, prefix.size(), prefix) == 0; }

// Plenty of free space whatever the test machine has, so that only the
// injected fault pauses the record.
void write_free_bytes(const std::string& file, uint64_t bytes) { std::ofstream(file, std::ios::trunc) << bytes << "\n"; }

class WriteFault : public ::testing::TestWithParam<const char*> {};

TEST_P(WriteFault, ShowsInTheReportWhileRepliesGoOnAndNothingOnDiskIsLost) {
    const std::string fault = GetParam();
    TempDir dir;
    const std::string record = dir / "record";
    write_free_bytes(dir / "free", uint64_t{100} << 30);
    json after_fault, resumed;
    std::string disk_before_fault;
    {
        // Write 1 is the first request's run; write 2, the second's, stops
        // part way and the call that would finish it fails.
        ScopedEnv faults(kWriteFaults, "2:" + fault);
        ScopedEnv free(kFreeBytesFile, dir / "free");
        ServerProcess server({"--recall-dir", record});
        ASSERT_TRUE(server.listening()) << server.output();
        EXPECT_NE(server.output().find("test seam TF_TEST_RECALL_WRITE_FAULTS=2:" + fault), std::string::npos)
            << server.output();

        expect_reply(server, kFirst);
        const json before = wait_for_adds(server, 1);
        ASSERT_TRUE(before["last_error"].is_null()) << before;
        disk_before_fault = chunk_bytes(record);
        ASSERT_EQ(disk_before_fault.size(), before["ids"].get<uint64_t>() * 4);

        expect_reply(server, kSecond);
        after_fault = wait_for_adds(server, 2);
        const std::string error =
            after_fault["last_error"].is_string() ? after_fault["last_error"].get<std::string>() : std::string();
        EXPECT_NE(error.find(std::strerror(fault == std::string("EIO") ? EIO : ENOSPC)), std::string::npos)
            << after_fault;
        EXPECT_NE(error.find("chunk-000000000001.ids"), std::string::npos) << after_fault;
        EXPECT_EQ(after_fault["state"], "paused-disk");
        EXPECT_EQ(after_fault["ids"], before["ids"]) << "memory holds nothing the disk lacks";
        EXPECT_EQ(chunk_bytes(record), disk_before_fault) << "the torn append was cut back";

        // Replies go on, and the next add (the fault fired once) goes in.
        expect_reply(server, kThird);
        resumed = wait_for_adds(server, 3);
        EXPECT_EQ(resumed["state"], "writing") << resumed;
        EXPECT_GT(resumed["ids"].get<uint64_t>(), before["ids"].get<uint64_t>());
        EXPECT_EQ(resumed["last_error"], after_fault["last_error"]) << "the report keeps the last failure";
        EXPECT_EQ(server.stop(), 0) << server.output();
    }
    const std::string disk_after = chunk_bytes(record);
    EXPECT_TRUE(starts_with(disk_after, disk_before_fault));
    ServerProcess again({"--recall-dir", record});
    ASSERT_TRUE(again.listening()) << again.output();
    EXPECT_EQ(recall_report(again)["ids"], resumed["ids"]) << "a restart finds every id";
}

INSTANTIATE_TEST_SUITE_P(EnospcAndEio, WriteFault, ::testing::Values("ENOSPC", "EIO"),
                         [](const auto& info) { return std::string(info.param); });

// kill -9 of the real server in the middle of an append: the seam writes part
// of the second request's run, ending inside an id, and kills the process.
// The restarted server cuts the torn id and keeps every complete one:
// ids before the kill <= ids after <= ids before + the unfinished append.
TEST(DiskFaults, AKill9MidAppendLosesOnlyTheTornIdAndTheRestartKeepsEveryCompleteId) {
    TempDir dir;
    const std::string record = dir / "record";
    write_free_bytes(dir / "free", uint64_t{100} << 30);
    ScopedEnv free(kFreeBytesFile, dir / "free");
    uint64_t ids_before = 0;
    std::string disk_before;
    {
        ScopedEnv faults(kWriteFaults, "2:SIGKILL");
        ServerProcess server({"--recall-dir", record});
        ASSERT_TRUE(server.listening()) << server.output();
        expect_reply(server, kFirst);
        ids_before = wait_for_adds(server, 1)["ids"];
        disk_before = chunk_bytes(record);
        try {
            // The reply may or may not get out before its add kills the server.
            server.post("/v1/completions", completion(kSecond));
        } catch (const std::exception&) {
        }
        EXPECT_EQ(server.wait(), -1) << "killed by a signal\n" << server.output();
    }
    const std::string torn = chunk_bytes(record);
    ASSERT_TRUE(starts_with(torn, disk_before));
    ASSERT_GT(torn.size(), disk_before.size()) << "part of the second run reached the disk";
    ASSERT_NE(torn.size() % 4, 0u) << "the kill left a torn id";
    // The unfinished append: its separator and the second request's ids,
    // which the torn write covered less than half of.
    const uint64_t unfinished_at_most = 2 * (torn.size() - disk_before.size()) / 4 + 2;

    ServerProcess again({"--recall-dir", record});
    ASSERT_TRUE(again.listening()) << again.output();
    const json report = recall_report(again);
    const uint64_t ids_after = report["ids"];
    EXPECT_EQ(ids_after, torn.size() / 4) << "every complete id is kept, the torn one cut";
    EXPECT_LE(ids_before, ids_after);
    EXPECT_LE(ids_after, ids_before + unfinished_at_most);
    const std::string repaired = chunk_bytes(record);
    EXPECT_EQ(repaired, torn.substr(0, ids_after * 4));
    // And the record takes new ids after the repaired tail.
    expect_reply(again, kThird);
    EXPECT_GT(wait_for_adds(again, 1)["ids"].get<uint64_t>(), ids_after);
}

// Under 4 GiB free, adds stop and serving goes on; once space returns, adds
// resume by themselves. The free space is read from a file the test writes.
TEST(DiskFaults, UnderFourGiBFreeAddsStopRepliesGoOnAndAddsResumeWhenSpaceReturns) {
    TempDir dir;
    const std::string record = dir / "record";
    const std::string free_file = dir / "free";
    write_free_bytes(free_file, uint64_t{100} << 30);
    ScopedEnv free(kFreeBytesFile, free_file);
    ServerProcess server({"--recall-dir", record});
    ASSERT_TRUE(server.listening()) << server.output();
    expect_reply(server, kFirst);
    const json before = wait_for_adds(server, 1);
    const std::string disk_before = chunk_bytes(record);

    write_free_bytes(free_file, (uint64_t{4} << 30) - 1);
    expect_reply(server, kSecond);
    // The writer counts the add it skipped: that is the event to wait for.
    const json paused = wait_for_report(
        server, [](const json& r) { return r["adds_skipped"].get<uint64_t>() >= 1; }, "a skipped add");
    EXPECT_EQ(paused["state"], "paused-disk");
    EXPECT_EQ(paused["ids"], before["ids"]);
    EXPECT_EQ(paused["adds"], 1);
    EXPECT_EQ(chunk_bytes(record), disk_before);
    EXPECT_NE(server.get("/metrics").body.find("tensorfold_recall_state{state=\"paused-disk\"} 1"), std::string::npos);

    write_free_bytes(free_file, uint64_t{4} << 30);
    expect_reply(server, kThird);
    const json resumed = wait_for_adds(server, 2);
    EXPECT_EQ(resumed["state"], "writing");
    EXPECT_GT(resumed["ids"].get<uint64_t>(), before["ids"].get<uint64_t>());
    EXPECT_TRUE(starts_with(chunk_bytes(record), disk_before));
}

TEST(DiskFaults, AServerStartedOnAFullDiskServesWithItsRecordPaused) {
    TempDir dir;
    write_free_bytes(dir / "free", uint64_t{1} << 30);
    ScopedEnv free(kFreeBytesFile, dir / "free");
    ServerProcess server({"--recall-dir", dir / "record"});
    ASSERT_TRUE(server.listening()) << server.output();
    EXPECT_NE(server.output().find("recall: paused-disk"), std::string::npos) << server.output();
    expect_reply(server, kFirst);
    const json report = wait_for_report(
        server, [](const json& r) { return r["adds_skipped"].get<uint64_t>() >= 1; }, "a skipped add");
    EXPECT_EQ(report["ids"], 0);
}

}  // namespace
}  // namespace tf::e2e
