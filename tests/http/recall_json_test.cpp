// GET and DELETE /v1/recall bodies from the record's stats.
//
// The report must expose the state, the disk and memory sizes, and the copy
// counters with their landing rate (docs/recall.md, "GET /v1/recall" and "DELETE").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http/recall_json.h"

namespace tf::http {
namespace {

using nlohmann::json;

actors::RecallReport writing_report() {
    actors::RecallReport report;
    report.enabled = true;
    recall::RecordStats& s = report.stats;
    s.state = recall::RecallState::writing;
    s.dir = "/tmp/record";
    s.capacity_bytes = 64u << 20;
    s.disk_bytes = 4000;
    s.chunk_memory_bytes = 8u << 20;
    s.key_table_bytes = 8u << 20;
    s.memory_bytes = 16u << 20;
    s.chunks = 1;
    s.ids = 1000;
    s.token_ids = 990;
    s.landing.buckets[0] = {.copies_offered = 3,
                            .tokens_drafted = 30,
                            .tokens_landed = 24,
                            .copies_missed = 1,
                            .own_tokens_displaced = 5,
                            .expected_landed = 7.5};
    s.landing.buckets[2] = {.copies_offered = 1,
                            .tokens_drafted = 64,
                            .tokens_landed = 64,
                            .copies_whole = 1,
                            .expected_landed = 60,
                            .landing_probability = 0.99};
    // Of bucket 64+'s copy, after a whole one.
    s.landing.by_history[2][1] = s.landing.buckets[2];
    s.landing.own_tokens_displaced = 5;
    s.landing.copies_same_as_own = 9;
    s.landing.copies_offered = 4;
    s.landing.tokens_drafted = 94;
    s.landing.tokens_landed = 88;
    return report;
}

TEST(RecallJson, ReportsStateDirectorySizesAndCopies) {
    const json body = json::parse(recall_report_json(writing_report()));
    EXPECT_EQ(body["object"], "recall");
    EXPECT_EQ(body["enabled"], true);
    EXPECT_EQ(body["state"], "writing");
    EXPECT_EQ(body["dir"], "/tmp/record");
    EXPECT_EQ(body["disk_bytes"], 4000);
    EXPECT_EQ(body["memory_bytes"], 16u << 20);
    EXPECT_EQ(body["chunks"], 1);
    EXPECT_EQ(body["ids"], 1000);
    EXPECT_EQ(body["copies_offered"], 4);
    EXPECT_EQ(body["tokens_drafted"], 94);
    EXPECT_EQ(body["tokens_landed"], 88);
    EXPECT_DOUBLE_EQ(body["landing_rate"].get<double>(), 88.0 / 94.0);
}

TEST(RecallJson, KeepsTheMatchBucketsApart) {
    // One entry per match-length band, each with its own counters (docs/recall.md, "GET /v1/recall").
    const json buckets = json::parse(recall_report_json(writing_report()))["buckets"];
    ASSERT_EQ(buckets.size(), 3u);
    EXPECT_EQ(buckets[0]["match"], "16-31");
    EXPECT_EQ(buckets[1]["match"], "32-63");
    EXPECT_EQ(buckets[2]["match"], "64+");
    EXPECT_EQ(buckets[0]["copies_offered"], 3);
    EXPECT_EQ(buckets[0]["tokens_drafted"], 30);
    EXPECT_EQ(buckets[0]["tokens_landed"], 24);
    EXPECT_DOUBLE_EQ(buckets[0]["landing_rate"].get<double>(), 0.8);
    EXPECT_EQ(buckets[2]["tokens_landed"], 64);
}

// Within a bucket, the copies are split by how the stream's previous copy
// in its reply landed, with the probability that sizes the next window; what
// copies cost (own tokens displaced, matches left to the own context) is there too.
TEST(RecallJson, SplitsEachBucketByCopyHistoryAndReportsWhatCopiesCost) {
    using json = nlohmann::json;
    const json body = json::parse(recall_report_json(writing_report()));
    EXPECT_EQ(body["own_tokens_displaced"], 5);
    EXPECT_EQ(body["copies_same_as_own"], 9);
    EXPECT_EQ(body["buckets"][0]["own_tokens_displaced"], 5);
    const json histories = body["buckets"][2]["by_history"];
    ASSERT_EQ(histories.size(), 3u);
    EXPECT_EQ(histories[0]["history"], "first");
    EXPECT_EQ(histories[1]["history"], "after_whole");
    EXPECT_EQ(histories[2]["history"], "after_short");
    EXPECT_EQ(histories[1]["copies_whole"], 1);
    EXPECT_EQ(histories[1]["tokens_landed"], 64);
    EXPECT_DOUBLE_EQ(histories[1]["landing_probability"].get<double>(), 0.99);
    EXPECT_EQ(histories[0]["copies_offered"], 0);
}

TEST(RecallJson, LandingRateIsNullBeforeAnythingWasDrafted) {
    const json body = json::parse(recall_report_json(writing_report()));
    EXPECT_TRUE(body["buckets"][1]["landing_rate"].is_null());
}

TEST(RecallJson, RecallOffSaysSo) {
    const json body = json::parse(recall_report_json(actors::RecallReport{}));
    EXPECT_EQ(body["enabled"], false);
    EXPECT_EQ(body["state"], "off");
    EXPECT_FALSE(body.contains("disk_bytes"));
}

TEST(RecallJson, DeleteStatusesFollowTheOutcome) {
    recall::EraseResult result;
    EXPECT_EQ(erase_status(result), 200);
    // A refusal (read-only or following server) maps to 409 and a failed
    // unlink to 500 (docs/recall.md, "DELETE").
    result.outcome = recall::EraseResult::Outcome::refused;
    EXPECT_EQ(erase_status(result), 409);
    result.outcome = recall::EraseResult::Outcome::failed;
    EXPECT_EQ(erase_status(result), 500);
}

TEST(RecallJson, AFailedDeleteNamesTheChunkFile) {
    // The 500 error carries the path of the chunk file left behind (docs/recall.md, "DELETE").
    recall::EraseResult result;
    result.outcome = recall::EraseResult::Outcome::failed;
    result.failed_file = "/tmp/record/chunk-000000000001.ids";
    result.message = "Is a directory";
    const ApiError error = erase_error(result);
    EXPECT_EQ(error.status, 500);
    EXPECT_NE(std::string(error.what()).find("/tmp/record/chunk-000000000001.ids"), std::string::npos) << error.what();
    const json body = json::parse(error.body());
    EXPECT_EQ(body["error"]["type"], "server_error");
    EXPECT_EQ(body["error"]["code"], 500);
}

}  // namespace
}  // namespace tf::http
