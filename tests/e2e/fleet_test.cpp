// scripts/fleet with two real replicas behind Debian's HAProxy
// (docs/deploy.md): consistent hashing on the session key keeps a
// conversation on the replica that holds its record, so a regenerated
// request lands its copy; round robin sends the repeat to the other replica,
// whose record has never seen it. Skips when haproxy or curl is missing.
//
// Nothing here depends on timing: HAProxy's round robin alternates between
// two equal servers request by request, the hash of a key is fixed, and the
// test waits for each replica's record to take a request's ids (its `adds`)
// before it sends the next one.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "file_changes.h"
#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;

bool installed(const std::string& program) {
    return test_support::run_command("command -v " + program + " >/dev/null 2>&1").exit_code == 0;
}

struct Reply {
    int status = 0;
    std::string replica;  // HAProxy's X-Tensorfold-Replica header
    std::string text;
};

// The fleet, started by the real script on a Unix socket in a temp dir (a
// socket path cannot collide with another test's port).
class Fleet {
public:
    Fleet(const TempDir& dir, const std::string& balance)
        : dir_(dir),
          socket_(dir / "fleet.sock"),
          process_({"bash", source_dir() + "/scripts/fleet", "2", "--listen", "unix@" + socket_, "--state-dir",
                    dir / "state", "--balance", balance, "--", "--threads", "1", "--log-level", "debug"},
                   {"TENSORFOLD=" + binary()}) {
        ready_ = !process_.wait_for_output(std::regex("fleet ready")).empty();
        std::ifstream lines(dir / "state/replicas");
        std::string name, address;
        pid_t pid = 0;
        while (lines >> name >> address >> pid) {
            ports_[name] = static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
        }
    }

    bool ready() const { return ready_ && ports_.size() == 2; }
    ChildProcess& process() { return process_; }

    // One completion through HAProxy with curl, a session key in the header
    // or, when `user` is set, in the body's "user" field instead.
    Reply complete(const std::string& prompt, const std::string& session, bool key_in_body = false) {
        json body = {{"model", "tinycode"}, {"prompt", prompt}, {"max_tokens", 64}, {"temperature", 0.7}, {"seed", 11}};
        std::string header;
        if (key_in_body) {
            body["user"] = session;
        } else {
            header = " -H 'X-Session-Id: " + session + "'";
        }
        const std::string file = dir_ / "body.json";
        std::ofstream(file) << body.dump();
        const test_support::CommandResult r = test_support::run_command(
            "curl -s -D - --unix-socket " + socket_ + " http://fleet/v1/completions -H 'Content-Type: application/json'" +
            header + " --data-binary @" + file);
        Reply reply;
        const size_t split = r.output.find("\r\n\r\n");
        if (r.exit_code != 0 || split == std::string::npos) return reply;
        std::istringstream head(r.output.substr(0, split));
        std::string line;
        std::getline(head, line);
        reply.status = std::stoi(line.substr(line.find(' ') + 1, 3));
        while (std::getline(head, line)) {
            const std::string name = "x-tensorfold-replica: ";
            std::string lower = line;
            for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            if (lower.rfind(name, 0) == 0) reply.replica = line.substr(name.size(), line.find('\r') - name.size());
        }
        const json parsed = json::parse(r.output.substr(split + 4), nullptr, false);
        if (!parsed.is_discarded() && parsed.contains("choices")) reply.text = parsed["choices"][0]["text"];
        return reply;
    }

    // The sum of one field of GET /v1/recall over the replicas, read from
    // each replica directly (the record is per replica).
    uint64_t total(const std::string& field) const {
        uint64_t sum = 0;
        for (const auto& [name, port] : ports_) sum += json::parse(http_request(port, "GET", "/v1/recall").body)[field].get<uint64_t>();
        return sum;
    }

    // Waits until the replicas' records have taken `adds` requests in all:
    // then the copy outcomes of those requests are counted too. A replica
    // logs a debug line to its log file (in its state directory) after each
    // add, so the sum is read again whenever a replica's log grows.
    bool wait_for_adds(uint64_t adds) const {
        std::vector<std::string> logs;
        for (const auto& [name, port] : ports_) logs.push_back(dir_ / ("state/" + name));
        return wait_for_file_changes(logs, [&] { return total("adds") >= adds; });
    }

private:
    const TempDir& dir_;
    std::string socket_;
    ChildProcess process_;
    bool ready_ = false;
    std::map<std::string, uint16_t> ports_;
};

struct Outcome {
    int sessions_landed = 0;  // regenerated requests that landed at least one copied token
    uint64_t tokens_landed = 0;
    int same_replica = 0;  // repeats answered by the replica that answered the first request
};

const std::vector<std::string> kPrompts = {
    "def binary_search(items, target):\n",
    "class LinkedList:\n    def __init__(self):\n",
    "def parse_csv_line(line):\n",
};

// Each session sends its request, then sends it again (a regenerate).
// `key_in_body_for_last`: the last session names itself by the body's "user".
Outcome regenerate_sessions(Fleet& fleet, bool key_in_body_for_last) {
    Outcome outcome;
    uint64_t adds = 0;
    for (size_t s = 0; s < kPrompts.size(); ++s) {
        const std::string session = "session-" + std::to_string(s);
        const bool in_body = key_in_body_for_last && s + 1 == kPrompts.size();
        const Reply first = fleet.complete(kPrompts[s], session, in_body);
        EXPECT_EQ(first.status, 200);
        EXPECT_TRUE(fleet.wait_for_adds(++adds)) << "the first reply of " << session << " never reached a record";
        const uint64_t landed_before = fleet.total("tokens_landed");
        const Reply again = fleet.complete(kPrompts[s], session, in_body);
        EXPECT_EQ(again.status, 200);
        // Replies are the same tokens whichever replica answers and whether
        // or not a copy landed (docs/recall.md).
        EXPECT_EQ(again.text, first.text) << session;
        EXPECT_TRUE(fleet.wait_for_adds(++adds)) << "the repeat of " << session << " never reached a record";
        const uint64_t landed = fleet.total("tokens_landed") - landed_before;
        outcome.tokens_landed += landed;
        outcome.sessions_landed += landed > 0 ? 1 : 0;
        outcome.same_replica += first.replica == again.replica ? 1 : 0;
        EXPECT_FALSE(first.replica.empty()) << "no X-Tensorfold-Replica header";
    }
    return outcome;
}

TEST(FleetE2e, AffinityLandsEveryRegeneratedCopyAndRoundRobinNoMore) {
    if (!installed("haproxy") || !installed("curl")) GTEST_SKIP() << "haproxy or curl missing (scripts/install-deps)";

    TempDir hash_dir;
    Outcome affinity;
    {
        Fleet fleet(hash_dir, "hash");
        ASSERT_TRUE(fleet.ready()) << fleet.process().output();
        affinity = regenerate_sessions(fleet, /*key_in_body_for_last=*/true);
        EXPECT_EQ(fleet.process().stop(), 0) << fleet.process().output();
    }
    TempDir round_robin_dir;
    Outcome round_robin;
    {
        Fleet fleet(round_robin_dir, "roundrobin");
        ASSERT_TRUE(fleet.ready()) << fleet.process().output();
        round_robin = regenerate_sessions(fleet, false);
        EXPECT_EQ(fleet.process().stop(), 0) << fleet.process().output();
    }

    std::cout << "fleet of 2, " << kPrompts.size() << " sessions each regenerated once:\n"
              << "  affinity:    " << affinity.same_replica << " repeats on the same replica, "
              << affinity.sessions_landed << " landed a copy, " << affinity.tokens_landed << " copied tokens landed\n"
              << "  round robin: " << round_robin.same_replica << " repeats on the same replica, "
              << round_robin.sessions_landed << " landed a copy, " << round_robin.tokens_landed
              << " copied tokens landed\n";
    ::testing::Test::RecordProperty("affinity_sessions_landed", affinity.sessions_landed);
    ::testing::Test::RecordProperty("round_robin_sessions_landed", round_robin.sessions_landed);

    // The header, and the body's "user" for the last session, pin a session
    // to one replica; every repeat then finds its first reply in the record.
    const int sessions = static_cast<int>(kPrompts.size());
    EXPECT_EQ(affinity.same_replica, sessions);
    EXPECT_EQ(affinity.sessions_landed, sessions);
    // Round robin alternates, so repeats go to the other replica.
    EXPECT_LT(round_robin.same_replica, sessions);
    EXPECT_GE(affinity.tokens_landed, round_robin.tokens_landed);
    EXPECT_GE(affinity.sessions_landed, round_robin.sessions_landed);
}

TEST(FleetE2e, SigtermLetsAStreamInFlightFinishThenStopsEachReplica) {
    if (!installed("haproxy") || !installed("curl")) GTEST_SKIP() << "haproxy or curl missing (scripts/install-deps)";
    TempDir dir;
    Fleet fleet(dir, "hash");
    ASSERT_TRUE(fleet.ready()) << fleet.process().output();

    // A streamed reply that has begun when SIGTERM arrives: the signal is
    // sent once its first chunk has been read, so the request is in flight
    // at a replica by then. It must still end with [DONE].
    const std::string body = dir / "stream.json";
    std::ofstream(body) << json{{"model", "tinycode"}, {"prompt", kPrompts[1]}, {"max_tokens", 256},
                                {"temperature", 0.7}, {"seed", 3}, {"stream", true}}
                               .dump();
    FILE* stream = ::popen(("curl -sN --unix-socket " + dir / "fleet.sock" +
                            " http://fleet/v1/completions -H 'Content-Type: application/json' -H 'X-Session-Id: drain'"
                            " --data-binary @" + body)
                               .c_str(),
                           "r");
    ASSERT_NE(stream, nullptr);
    char line[65536];
    std::vector<std::string> events;
    while (std::fgets(line, sizeof line, stream) != nullptr) {
        if (std::string(line).rfind("data: ", 0) != 0) continue;
        events.emplace_back(line);
        if (events.size() == 1) fleet.process().signal(SIGTERM);
    }
    ::pclose(stream);
    ASSERT_FALSE(events.empty()) << "no chunk before the drain";
    EXPECT_EQ(events.back(), "data: [DONE]\n") << events.size() << " events, the last: " << events.back();

    EXPECT_EQ(fleet.process().wait(), 0) << fleet.process().output();
    const std::string out = fleet.process().output();
    EXPECT_NE(out.find("fleet: draining"), std::string::npos) << out;
    EXPECT_NE(out.find("fleet: stopped"), std::string::npos) << out;
    // Each replica took SIGTERM its own way: answers finished, record flushed.
    for (const char* replica : {"r1", "r2"}) {
        std::ifstream log(dir / (std::string("state/") + replica + "/log"));
        const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        EXPECT_NE(text.find("SIGTERM received, stopping"), std::string::npos) << replica << ":\n" << text;
    }
}

}  // namespace
}  // namespace tf::e2e
