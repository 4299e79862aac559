// `tensorfold bench-serve` against the real server on tinycode: the
// workloads make-workloads writes (the same for the same seed), the JSON
// report's fields, identical replies on a second run, and a reference file
// with one changed token reported as a mismatch.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

test_support::CommandResult bench(const std::string& args) {
    return test_support::run_command(binary() + " bench-serve " + args);
}

const std::vector<std::string> kWorkloads = {"regenerate", "new-session", "agent-pastes", "boilerplate", "fresh"};

class BenchServeE2e : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_TRUE(server_.listening()) << server_.output(); }

    // make-workloads into `dir`, small enough for a quick test.
    void make(const std::string& dir) {
        const auto made = bench("make-workloads --url " + server_.base_url() + " --out " + dir +
                                " --seed 3 --requests 4 --max-tokens 24 2>&1");
        ASSERT_EQ(made.exit_code, 0) << made.output;
    }

    std::string files(const std::string& dir) const {
        std::string list;
        for (const std::string& name : kWorkloads) list += " " + dir + "/" + name + ".jsonl";
        return list;
    }

    TempDir temp_;
    // Recall on, so that the copy counters have something to count.
    ServerProcess server_{{"--recall-dir", temp_ / "record"}};
};

TEST_F(BenchServeE2e, ReportsFieldsKeepsIdentityAndCatchesAChangedReference) {
    make(temp_ / "a");
    make(temp_ / "b");
    for (const std::string& name : kWorkloads) {
        const std::string a = read_text(temp_ / "a/" + name + ".jsonl");
        EXPECT_FALSE(a.empty()) << name;
        EXPECT_EQ(a, read_text(temp_ / "b/" + name + ".jsonl")) << name << ": not the same for the same seed";
    }

    const std::string url = " --url " + server_.base_url();
    const auto first = bench("--json --concurrency 2 --save-replies " + (temp_ / "replies.jsonl") + url + files(temp_ / "a"));
    ASSERT_EQ(first.exit_code, 0) << first.output;
    const json report = json::parse(first.output);
    EXPECT_EQ(report["server"], "tensorfold");
    EXPECT_EQ(report["concurrency"], 2);
    ASSERT_EQ(report["workloads"].size(), kWorkloads.size());
    for (const json& w : report["workloads"]) {
        SCOPED_TRACE(w["name"].get<std::string>());
        EXPECT_EQ(w["requests"], 4);
        EXPECT_EQ(w["failed"], 0);
        EXPECT_GT(w["output_tokens"].get<int64_t>(), 0);
        EXPECT_GT(w["output_tokens_per_s"].get<double>(), 0);
        EXPECT_GT(w["requests_per_s"].get<double>(), 0);
        EXPECT_TRUE(w["exact_tokens"].get<bool>());
        for (const char* key : {"ttft_ms", "itl_ms"}) {
            EXPECT_GE(w[key]["p90"].get<double>(), w[key]["median"].get<double>()) << key;
            EXPECT_GE(w[key]["p99"].get<double>(), w[key]["p90"].get<double>()) << key;
        }
        EXPECT_GT(w["ttft_ms"]["median"].get<double>(), 0);
        EXPECT_GE(w["tokens_per_chunk"].get<double>(), 1.0);
        EXPECT_GT(w["rounds"].get<int64_t>(), 0);
        EXPECT_GT(w["tokens_per_round"].get<double>(), 0);
        for (const char* key : {"copies_offered", "copies_landed", "copy_tokens_drafted", "copy_tokens_landed",
                                "own_draft_tokens_drafted", "own_draft_tokens_landed"}) {
            EXPECT_GE(w[key].get<int64_t>(), 0) << key;
        }
        EXPECT_EQ(w["recall_state"], "writing");
        EXPECT_TRUE(w["identical"].is_null());
    }
    // The regenerated wave repeats the first, so the record offers copies of it.
    const json& regenerate = report["workloads"][0];
    ASSERT_EQ(regenerate["name"], "regenerate");
    ASSERT_EQ(regenerate["waves"].size(), 2u);
    EXPECT_EQ(regenerate["waves"][0]["wave"], 0);
    EXPECT_EQ(regenerate["waves"][1]["requests"], 2);
    EXPECT_GT(regenerate["waves"][1]["copy_tokens_landed"].get<int64_t>(), 0);

    const std::string replies = read_text(temp_ / "replies.jsonl");
    const auto again = bench("--json --concurrency 1 --reference " + (temp_ / "replies.jsonl") + url + files(temp_ / "a"));
    ASSERT_EQ(again.exit_code, 0) << again.output;
    for (const json& w : json::parse(again.output)["workloads"]) {
        EXPECT_EQ(w["identical"], true) << w["name"] << ": " << w["replies_mismatched"];
        EXPECT_EQ(w["replies_matched"], 4) << w["name"];
    }

    // Change one token of one saved reply: that reply no longer matches.
    std::istringstream lines(replies);
    std::string corrupted, label, line;
    while (std::getline(lines, line)) {
        json entry = json::parse(line);
        if (label.empty() && entry["workload"] == "fresh" && !entry["token_ids"].empty()) {
            label = entry["label"];
            entry["token_ids"][0] = entry["token_ids"][0].get<int64_t>() + 1;
        }
        corrupted += entry.dump() + "\n";
    }
    ASSERT_FALSE(label.empty());
    {
        std::ofstream out(temp_ / "corrupted.jsonl");
        out << corrupted;
    }
    const auto mismatch =
        bench("--json --reference " + (temp_ / "corrupted.jsonl") + url + " " + (temp_ / "a/fresh.jsonl"));
    EXPECT_EQ(mismatch.exit_code, 1) << mismatch.output;
    const json w = json::parse(mismatch.output)["workloads"][0];
    EXPECT_EQ(w["identical"], false);
    EXPECT_EQ(w["replies_matched"], 3);
    EXPECT_EQ(w["replies_mismatched"], json::array({label}));
}

}  // namespace
}  // namespace tf::e2e
