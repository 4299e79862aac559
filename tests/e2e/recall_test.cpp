// Recall through the real server: GET/DELETE /v1/recall, /metrics, the
// record's files, and identical replies with Recall off, on and read-only.
// Every record lives in a temp dir (--recall-dir), never in ~/.cache.
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "recall_report.h"
#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A prompt that tinycode answers with code, sampled at temperature > 0 with a
// fixed seed, so a regenerated request repeats the reply token for token.
std::string sampled_request(int max_tokens = 64) {
    return json{{"model", "tinycode"},
                {"prompt", "def quicksort(items):\n    \"\"\"Sort a list.\"\"\"\n"},
                {"max_tokens", max_tokens},
                {"temperature", 0.7},
                {"seed", 42}}
        .dump();
}

// For a server whose record refuses DELETE (read-only or following): the
// supervisor hands a DELETE to the writer actor, which takes it after every
// message sent to it earlier (the outcomes and ids of every reply already
// received), and a refused DELETE changes nothing. Once it has answered 409,
// the report shows all the writer will ever do for those replies.
void writer_barrier(const ServerProcess& server) {
    const Response refused = server.request("DELETE", "/v1/recall");
    ASSERT_EQ(refused.status, 409) << refused.body;
}

std::string reply_text(const Response& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body)["choices"][0]["text"];
}

std::vector<fs::path> chunk_files(const std::string& dir) {
    std::vector<fs::path> chunks;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().filename().string().rfind("chunk-", 0) == 0) chunks.push_back(entry.path());
    }
    std::sort(chunks.begin(), chunks.end());
    return chunks;
}

// The files created or written in a directory since the watch began
// (inotify, read without blocking: the caller orders its events first).
class DirectoryWatch {
public:
    explicit DirectoryWatch(const std::string& dir) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
        EXPECT_GE(fd_, 0) << "inotify_init1: " << std::strerror(errno);
        if (fd_ >= 0) {
            EXPECT_GE(::inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_MODIFY | IN_MOVED_TO), 0)
                << "inotify_add_watch " << dir << ": " << std::strerror(errno);
        }
    }
    ~DirectoryWatch() {
        if (fd_ >= 0) ::close(fd_);
    }
    DirectoryWatch(const DirectoryWatch&) = delete;
    DirectoryWatch& operator=(const DirectoryWatch&) = delete;

    // Names starting with `prefix` of the files created, written or moved in,
    // in order, repeats kept.
    std::vector<std::string> written(const std::string& prefix) const {
        std::vector<std::string> names;
        alignas(inotify_event) char buffer[8192];
        for (;;) {
            const ssize_t n = fd_ >= 0 ? ::read(fd_, buffer, sizeof buffer) : -1;
            if (n <= 0) break;
            for (ssize_t at = 0; at < n;) {
                const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
                if (event->len > 0 && std::string(event->name).rfind(prefix, 0) == 0) names.emplace_back(event->name);
                at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
            }
        }
        return names;
    }

private:
    int fd_;
};

double metric(const std::string& text, const std::string& series) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    }
    ADD_FAILURE() << "no " << series;
    return -1;
}

TEST(RecallE2e, StartupLineStatesTheRecordsStateDirectoryAndSize) {
    // The startup line reports the record's state and size, as GET /v1/recall
    // does (docs/recall.md, "States").
    TempDir dir;
    ServerProcess server({"--recall-dir", dir / "record"});
    ASSERT_TRUE(server.listening()) << server.output();
    const std::string out = server.output();
    EXPECT_NE(out.find("recall: writing, " + dir / "record"), std::string::npos) << out;
    EXPECT_NE(out.find("in memory"), std::string::npos) << out;
    ServerProcess off({});
    ASSERT_TRUE(off.listening());
    EXPECT_NE(off.output().find("recall: off"), std::string::npos) << off.output();
}

TEST(RecallE2e, ARegeneratedRequestCopiesItsEarlierReply) {
    // Asking again for the same sampled reply drafts it from the record, and
    // the report counts the copies that landed (docs/recall.md, "GET /v1/recall").
    TempDir dir;
    ServerProcess server({"--recall-dir", dir / "record"});
    ASSERT_TRUE(server.listening()) << server.output();
    const json empty = recall_report(server);
    EXPECT_EQ(empty["state"], "writing");
    EXPECT_EQ(empty["copies_offered"], 0);

    const std::string first = reply_text(server.post("/v1/completions", sampled_request()));
    const json after_first = wait_for_ids(server, 64);
    EXPECT_GT(after_first["ids"].get<uint64_t>(), 64u) << after_first;
    EXPECT_GT(after_first["disk_bytes"].get<uint64_t>(), 0u);
    EXPECT_EQ(after_first["chunks"], 1);
    EXPECT_EQ(after_first["memory_bytes"].get<uint64_t>(),
              after_first["chunk_memory_bytes"].get<uint64_t>() + after_first["key_table_bytes"].get<uint64_t>());

    const std::string second = reply_text(server.post("/v1/completions", sampled_request()));
    EXPECT_EQ(second, first);
    const json report = wait_for_adds(server, 2);
    EXPECT_GE(report["copies_offered"].get<uint64_t>(), 1u) << report;
    EXPECT_GE(report["tokens_landed"].get<uint64_t>(), 1u) << report;
    EXPECT_GT(report["landing_rate"].get<double>(), 0.5) << report;
    uint64_t bucket_landed = 0;
    for (const json& bucket : report["buckets"]) bucket_landed += bucket["tokens_landed"].get<uint64_t>();
    EXPECT_EQ(bucket_landed, report["tokens_landed"].get<uint64_t>());
    // The repeat is deduplicated (its long runs are already held), so the
    // record barely grows (docs/recall.md, "On disk").
    EXPECT_LE(report["ids"].get<uint64_t>(), after_first["ids"].get<uint64_t>() + 2) << report;

    const std::string metrics = server.get("/metrics").body;
    EXPECT_EQ(metric(metrics, R"(tensorfold_recall_state{state="writing"})"), 1);
    EXPECT_GE(metric(metrics, "tensorfold_recall_disk_bytes"), report["disk_bytes"].get<double>());
    EXPECT_EQ(static_cast<uint64_t>(metric(metrics, "tensorfold_recall_disk_bytes")) % 4, 0u);
    double landed = 0;
    for (const char* bucket : {"16-31", "32-63", "64+"}) {
        landed += metric(metrics, std::string(R"(tensorfold_recall_copy_tokens_landed_total{match=")") + bucket + "\"}");
    }
    // The engine reports a copy's outcome after its round; counters only
    // grow, so /metrics lies between the report before and after it.
    EXPECT_GE(landed, report["tokens_landed"].get<double>());
    EXPECT_LE(landed, recall_report(server)["tokens_landed"].get<double>());
}

TEST(RecallE2e, RepliesAreTheSameTokensWithRecallOffOnAndReadOnly) {
    // Copies are drafts that the target model still verifies, so recall off,
    // on or read-only never changes the reply (docs/recall.md, "Flags").
    TempDir dir;
    std::string off_reply, on_first, on_second, read_only_reply;
    {
        ServerProcess off({});
        ASSERT_TRUE(off.listening()) << off.output();
        off_reply = reply_text(off.post("/v1/completions", sampled_request()));
    }
    {
        ServerProcess on({"--recall-dir", dir / "record"});
        ASSERT_TRUE(on.listening()) << on.output();
        on_first = reply_text(on.post("/v1/completions", sampled_request()));
        wait_for_ids(on, 64);
        on_second = reply_text(on.post("/v1/completions", sampled_request()));
        EXPECT_GT(wait_for_adds(on, 2)["tokens_landed"].get<uint64_t>(), 0u);
    }
    {
        ServerProcess read_only({"--recall-dir", dir / "record", "--recall-read-only"});
        ASSERT_TRUE(read_only.listening()) << read_only.output();
        read_only_reply = reply_text(read_only.post("/v1/completions", sampled_request()));
        writer_barrier(read_only);  // the reply's copy outcomes are counted
        const json report = recall_report(read_only);
        EXPECT_EQ(report["state"], "read-only");
        EXPECT_GT(report["tokens_landed"].get<uint64_t>(), 0u) << "read-only still drafts from the record";
    }
    EXPECT_EQ(on_first, off_reply);
    EXPECT_EQ(on_second, off_reply);
    EXPECT_EQ(read_only_reply, off_reply);
}

TEST(RecallE2e, DeleteEmptiesTheRecordAndKeepsDirectoryIdentityAndLock) {
    // DELETE clears the chunk files, the in-memory record, its landing rates
    // and counters, but keeps the directory, identity file and lock, which
    // hold no ids (docs/recall.md, "DELETE").
    TempDir dir;
    const std::string record = dir / "record";
    ServerProcess server({"--recall-dir", record});
    ASSERT_TRUE(server.listening()) << server.output();
    reply_text(server.post("/v1/completions", sampled_request()));
    wait_for_ids(server, 64);
    reply_text(server.post("/v1/completions", sampled_request()));
    ASSERT_FALSE(chunk_files(record).empty());
    const Response r = server.request("DELETE", "/v1/recall");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(json::parse(r.body)["deleted"], true);
    const json report = recall_report(server);
    EXPECT_EQ(report["ids"], 0);
    EXPECT_EQ(report["chunks"], 0);
    EXPECT_EQ(report["disk_bytes"], 0);
    EXPECT_EQ(report["copies_offered"], 0);
    EXPECT_EQ(report["tokens_landed"], 0);
    EXPECT_TRUE(report["landing_rate"].is_null());
    EXPECT_TRUE(chunk_files(record).empty());
    EXPECT_TRUE(fs::exists(record + "/identity"));
    EXPECT_TRUE(fs::exists(record + "/lock"));
    EXPECT_EQ(metric(server.get("/metrics").body, "tensorfold_recall_ids"), 0);
}

TEST(RecallE2e, ReadOnlyAndFollowingServersRefuseDeleteWith409) {
    // Read-only servers and followers of another server's record answer
    // DELETE with 409 (docs/recall.md, "DELETE").
    TempDir dir;
    const std::string record = dir / "record";
    ServerProcess writer({"--recall-dir", record});
    ASSERT_TRUE(writer.listening()) << writer.output();
    reply_text(writer.post("/v1/completions", sampled_request()));
    wait_for_ids(writer, 64);
    ServerProcess follower({"--recall-dir", record});
    ASSERT_TRUE(follower.listening()) << follower.output();
    EXPECT_EQ(recall_report(follower)["state"], "following");
    const Response refused = follower.request("DELETE", "/v1/recall");
    EXPECT_EQ(refused.status, 409) << refused.body;
    EXPECT_EQ(json::parse(refused.body)["error"]["code"], 409);
    // A follower (a second server on a directory another one writes) sees the
    // record as it stood and never adds to it (docs/recall.md, "States").
    const uint64_t ids = recall_report(follower)["ids"];
    EXPECT_GT(ids, 0u);
    reply_text(follower.post("/v1/completions",
                             json{{"model", "tinycode"}, {"prompt", "import json\n"}, {"max_tokens", 24}}.dump()));
    // Not "wait a while and see nothing happened": the refused DELETE comes
    // back only after the writer has taken (and refused) this reply's ids.
    writer_barrier(follower);
    EXPECT_EQ(recall_report(follower)["ids"], ids);
    follower.stop();

    ServerProcess read_only({"--recall-dir", record, "--recall-read-only"});
    ASSERT_TRUE(read_only.listening()) << read_only.output();
    EXPECT_EQ(read_only.request("DELETE", "/v1/recall").status, 409);
    EXPECT_FALSE(chunk_files(record).empty());
    // Recall off: nothing to delete, refused the same way.
    ServerProcess off({});
    ASSERT_TRUE(off.listening());
    EXPECT_EQ(off.request("DELETE", "/v1/recall").status, 409);
}

TEST(RecallE2e, AChunkThatCannotBeDeletedIs500NamingItUntilALaterDeleteSucceeds) {
    // A chunk file that cannot be removed turns DELETE into a 500 naming it,
    // and adds stay paused until a later DELETE clears every chunk
    // (docs/recall.md, "DELETE").
    TempDir dir;
    const std::string record = dir / "record";
    ServerProcess server({"--recall-dir", record});
    ASSERT_TRUE(server.listening()) << server.output();
    reply_text(server.post("/v1/completions", sampled_request()));
    wait_for_ids(server, 64);
    const std::vector<fs::path> chunks = chunk_files(record);
    ASSERT_EQ(chunks.size(), 1u);
    // As root, permissions do not stop unlink(2); a non-empty directory in the
    // chunk's place does (EISDIR).
    const fs::path chunk = chunks.front();
    fs::remove(chunk);
    fs::create_directory(chunk);
    std::ofstream(chunk / "keep") << "x";

    const Response failed = server.request("DELETE", "/v1/recall");
    EXPECT_EQ(failed.status, 500) << failed.body;
    EXPECT_NE(json::parse(failed.body)["error"]["message"].get<std::string>().find(chunk.filename().string()),
              std::string::npos)
        << failed.body;
    EXPECT_EQ(recall_report(server)["state"], "paused-delete");
    EXPECT_EQ(metric(server.get("/metrics").body, R"(tensorfold_recall_state{state="paused-delete"})"), 1);
    // Nothing is added while paused (a request of new text would add its ids).
    // A paused record counts no adds, so there is no counter to wait for (a
    // count of refused adds in GET /v1/recall would be one). Instead: watch
    // the directory, send the request, then DELETE again. That DELETE still
    // fails (the chunk directory is still there) and is answered by the
    // writer only after it has taken the request's ids, so by its answer an
    // add that went wrong has written a chunk file, which inotify reports even
    // though the DELETE removes it again.
    const uint64_t ids = recall_report(server)["ids"];
    const DirectoryWatch watch(record);
    reply_text(server.post("/v1/completions",
                           json{{"model", "tinycode"}, {"prompt", "import json\n"}, {"max_tokens", 24}}.dump()));
    EXPECT_EQ(recall_report(server)["ids"], ids);
    EXPECT_EQ(server.request("DELETE", "/v1/recall").status, 500) << "the barrier DELETE should still fail";
    EXPECT_EQ(watch.written("chunk-"), std::vector<std::string>{}) << "a paused record wrote chunk files";

    fs::remove_all(chunk);
    const Response recovered = server.request("DELETE", "/v1/recall");
    EXPECT_EQ(recovered.status, 200) << recovered.body;
    EXPECT_EQ(recall_report(server)["state"], "writing");
    EXPECT_TRUE(chunk_files(record).empty());
    reply_text(server.post("/v1/completions", sampled_request(16)));
    EXPECT_GT(wait_for_ids(server, 1)["ids"].get<uint64_t>(), 0u) << "adds resume after the successful DELETE";
}

TEST(RecallE2e, TheRecordHoldsOnlyIdsInPrivateFiles) {
    // On disk the record is ids only, no text: chunk files of at most 4 MiB
    // in a 0700 directory, every file 0600 (docs/recall.md, "On disk" and
    // "Privacy").
    TempDir dir;
    const std::string record = dir / "record";
    {
        ServerProcess server({"--recall-dir", record});
        ASSERT_TRUE(server.listening()) << server.output();
        reply_text(server.post("/v1/completions", sampled_request()));
        EXPECT_EQ(server.post("/v1/chat/completions",
                              R"({"model":"tinycode","messages":[{"role":"user","content":"hi"}],"max_tokens":16})")
                      .status,
                  200);
    }
    struct stat st {};
    ASSERT_EQ(::stat(record.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    for (const auto& entry : fs::directory_iterator(record)) {
        ASSERT_EQ(::stat(entry.path().c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0600u) << entry.path();
    }
    const std::vector<fs::path> chunks = chunk_files(record);
    ASSERT_FALSE(chunks.empty());
    for (const fs::path& chunk : chunks) {
        const auto size = fs::file_size(chunk);
        EXPECT_EQ(size % 4, 0u) << chunk;
        EXPECT_LE(size, 4u << 20);
        std::ifstream in(chunk, std::ios::binary);
        std::vector<uint32_t> ids(size / 4);
        in.read(reinterpret_cast<char*>(ids.data()), static_cast<std::streamsize>(size));
        for (uint32_t id : ids) {
            EXPECT_TRUE(id < 8192 || id == 0xFFFFFFFFu) << chunk << ": " << id;
            if (!(id < 8192 || id == 0xFFFFFFFFu)) break;
        }
    }
}

TEST(RecallE2e, ARestartKeepsTheRecord) {
    TempDir dir;
    const std::string record = dir / "record";
    json before;
    std::string reply;
    {
        ServerProcess server({"--recall-dir", record});
        ASSERT_TRUE(server.listening()) << server.output();
        reply = reply_text(server.post("/v1/completions", sampled_request()));
        before = wait_for_ids(server, 64);
        EXPECT_EQ(server.stop(), 0) << server.output();
    }
    ServerProcess again({"--recall-dir", record});
    ASSERT_TRUE(again.listening()) << again.output();
    const json after = recall_report(again);
    EXPECT_EQ(after["ids"], before["ids"]);
    EXPECT_EQ(after["disk_bytes"], before["disk_bytes"]);
    // The restarted server copies the reply it wrote before the restart.
    EXPECT_EQ(reply_text(again.post("/v1/completions", sampled_request())), reply);
    EXPECT_GT(wait_for_adds(again, 1)["tokens_landed"].get<uint64_t>(), 0u);
}

TEST(RecallE2e, RecallRoutesNeedTheApiKey) {
    // GET and DELETE /v1/recall are behind the API key when the server has one
    // (docs/recall.md, "GET /v1/recall" and "DELETE").
    TempDir dir;
    ServerProcess server({"--recall-dir", dir / "record", "--api-key", "k1"});
    ASSERT_TRUE(server.listening()) << server.output();
    EXPECT_EQ(server.get("/v1/recall").status, 401);
    EXPECT_EQ(server.request("DELETE", "/v1/recall").status, 401);
    EXPECT_EQ(server.get("/v1/recall", {{"Authorization", "Bearer k1"}}).status, 200);
    EXPECT_EQ(server.request("DELETE", "/v1/recall", "", {{"Authorization", "Bearer k1"}}).status, 200);
}

}  // namespace
}  // namespace tf::e2e
