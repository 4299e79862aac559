// bench-serve's arithmetic and parsing without a server: SSE framing, the
// chunks of a stream, percentiles, counter deltas, reference comparison,
// the report's fields and URLs.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/bench_report.h"
#include "bench/bench_serve_client.h"
#include "bench/bench_stream.h"

namespace tf::bench {
namespace {

using nlohmann::json;

TEST(BenchServeSse, EventsSplitAcrossPiecesAndLineEndings) {
    SseParser parser;
    EXPECT_TRUE(parser.feed("da").empty());
    EXPECT_TRUE(parser.feed("ta: {\"a\":1}\n").empty());
    std::vector<std::string> events = parser.feed("\ndata: [DONE]\r\n\r\n");
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0], "{\"a\":1}");
    EXPECT_EQ(events[1], "[DONE]");
}

TEST(BenchServeSse, CommentsAndOtherFieldsAreSkippedMultiLineDataJoined) {
    SseParser parser;
    std::vector<std::string> events = parser.feed(": keep-alive\n\nevent: x\ndata:one\ndata: two\nid: 3\n\n");
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0], "one\ntwo");
}

std::string completion_chunk(const std::string& text, const std::vector<int32_t>* ids) {
    json choice = {{"index", 0}, {"text", text}, {"finish_reason", nullptr}};
    if (ids) choice["token_ids"] = *ids;
    return json{{"object", "text_completion"}, {"choices", json::array({choice})}}.dump();
}

TEST(BenchServeTrace, ChatRoleChunkIsNotContentAndUsageIsRead) {
    ReplyTrace t;
    t.sent = 1.0;
    const std::string role = R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"token_ids":[]}]})";
    EXPECT_TRUE(take_event(t, role, 1.01));
    EXPECT_LT(t.first_content, 0);
    EXPECT_TRUE(take_event(t, R"({"choices":[{"index":0,"delta":{"content":"ab"},"token_ids":[5,6]}]})", 1.05));
    EXPECT_TRUE(take_event(t, R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}})", 1.06));
    EXPECT_FALSE(take_event(t, "[DONE]", 1.07));
    EXPECT_DOUBLE_EQ(t.ttft(), 1.05 - 1.0);
    EXPECT_EQ(t.text, "ab");
    EXPECT_EQ(t.token_ids, (std::vector<int32_t>{5, 6}));
    EXPECT_TRUE(t.exact);
    EXPECT_EQ(t.usage_tokens, 2);
    EXPECT_EQ(t.tokens(), 2);
}

// A chunk of several tokens (a landed draft) shares its gap among them.
TEST(BenchServeTrace, ItlIsPerTokenWithExactIds) {
    ReplyTrace t;
    const std::vector<int32_t> one = {1}, four = {2, 3, 4, 5}, two = {6, 7};
    take_event(t, completion_chunk("a", &one), 0.010);
    take_event(t, completion_chunk("bcde", &four), 0.018);
    take_event(t, completion_chunk("fg", &two), 0.020);
    const std::vector<double> itl = t.itl();
    ASSERT_EQ(itl.size(), 6u);  // the first chunk's token belongs to the TTFT
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(itl[static_cast<size_t>(i)], 0.002, 1e-12);
    EXPECT_NEAR(itl[4], 0.001, 1e-12);
    EXPECT_NEAR(itl[5], 0.001, 1e-12);
    EXPECT_EQ(t.tokens(), 7);
}

// Without ids a server's chunks are taken to carry usage / chunks tokens each.
TEST(BenchServeTrace, WithoutIdsTheUsageCountIsSpreadOverChunks) {
    ReplyTrace t;
    take_event(t, completion_chunk("a", nullptr), 0.0);
    take_event(t, completion_chunk("b", nullptr), 0.004);
    take_event(t, completion_chunk("c", nullptr), 0.008);
    take_event(t, R"({"choices":[],"usage":{"completion_tokens":6}})", 0.009);
    EXPECT_FALSE(t.exact);
    EXPECT_EQ(t.tokens(), 6);
    const std::vector<double> itl = t.itl();
    ASSERT_EQ(itl.size(), 2u);
    EXPECT_NEAR(itl[0], 0.002, 1e-12);
    ReplyTrace bare;
    take_event(bare, completion_chunk("a", nullptr), 0.0);
    take_event(bare, completion_chunk("b", nullptr), 0.5);
    EXPECT_EQ(bare.tokens(), 2);  // no usage either: one token per chunk
}

TEST(BenchServeTrace, AnErrorInTheStreamFailsTheRequest) {
    ReplyTrace t;
    t.ok = true;
    take_event(t, R"({"error":{"message":"boom"}})", 0.1);
    EXPECT_FALSE(t.ok);
    EXPECT_NE(t.error.find("boom"), std::string::npos);
}

TEST(BenchServeStats, PercentilesInterpolateBetweenRanks) {
    EXPECT_TRUE(std::isnan(percentile({}, 50)));
    EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
    EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2.5);
    EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 90), 10);
    EXPECT_DOUBLE_EQ(percentile({0, 100}, 99), 99);
    EXPECT_DOUBLE_EQ(percentile({1, 2}, 0), 1);
    EXPECT_DOUBLE_EQ(percentile({1, 2}, 100), 2);
}

constexpr const char* kMetricsPage =
    "# HELP tensorfold_rounds_total Engine rounds run.\n"
    "# TYPE tensorfold_rounds_total counter\n"
    "tensorfold_rounds_total 100\n"
    "tensorfold_rounds_total_extra 5\n"
    "tensorfold_generation_tokens_total 250\n"
    "tensorfold_recall_copies_offered_total{match=\"16-31\"} 2\n"
    "tensorfold_recall_copies_offered_total{match=\"64+\"} 3\n";

TEST(BenchServeCounters, MetricSumAddsLabelSetsAndIgnoresLongerNames) {
    EXPECT_EQ(metric_sum(kMetricsPage, "tensorfold_rounds_total"), 100);
    EXPECT_EQ(metric_sum(kMetricsPage, "tensorfold_recall_copies_offered_total"), 5);
    EXPECT_FALSE(metric_sum(kMetricsPage, "tensorfold_missing_total"));
}

ReplyTrace done_trace(const std::string& label, double sent, double done, std::vector<int32_t> ids) {
    ReplyTrace t;
    t.workload = "w";
    t.label = label;
    t.ok = true;
    t.sent = sent;
    t.first_content = sent + 0.1;
    t.done = done;
    t.token_ids = std::move(ids);
    t.text = "x" + label;
    t.chunk_times = {sent + 0.1, done};
    t.chunk_tokens = {1, static_cast<int64_t>(t.token_ids.size()) - 1};
    return t;
}

TEST(BenchServeStats, SummaryOfRepliesAndTensorfoldDeltas) {
    ServerCounters before, after;
    read_metrics(before, kMetricsPage);
    read_recall(before, R"({"object":"recall","enabled":true,"state":"writing","copies_offered":1,"tokens_drafted":10,
                           "tokens_landed":8,"adds":4,"buckets":[{"copies_missed":0},{"copies_missed":1}]})");
    read_metrics(after, "tensorfold_rounds_total 140\ntensorfold_generation_tokens_total 350\n");
    read_recall(after, R"({"object":"recall","enabled":true,"state":"writing","copies_offered":5,"tokens_drafted":50,
                          "tokens_landed":40,"adds":6,"buckets":[{"copies_missed":1},{"copies_missed":1}]})");
    ASSERT_TRUE(after.tensorfold());
    const std::vector<ReplyTrace> traces = {done_trace("a", 0.0, 1.0, {1, 2, 3, 4}), done_trace("b", 0.5, 2.0, {5, 6})};
    const Summary s = summarize(traces, before, after);
    EXPECT_EQ(s.requests, 2);
    EXPECT_EQ(s.failed, 0);
    EXPECT_DOUBLE_EQ(s.duration_s, 2.0);
    EXPECT_EQ(s.output_tokens, 6);
    EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 3.0);
    EXPECT_DOUBLE_EQ(s.requests_per_s, 1.0);
    EXPECT_NEAR(s.ttft_ms.median, 100, 1e-9);
    EXPECT_TRUE(s.exact_tokens);
    EXPECT_DOUBLE_EQ(s.tokens_per_chunk, 1.5);
    EXPECT_EQ(s.rounds, 40);
    EXPECT_EQ(s.tokens_per_round, 2.5);
    EXPECT_EQ(s.copies_offered, 4);
    EXPECT_EQ(s.copies_landed, 3);
    EXPECT_EQ(s.copy_tokens_drafted, 40);
    EXPECT_EQ(s.copy_tokens_landed, 32);
    EXPECT_EQ(s.recall_state, "writing");
}

TEST(BenchServeStats, OtherServersHaveNoTensorfoldFields) {
    const Summary s = summarize({done_trace("a", 0, 1, {1, 2})}, ServerCounters{}, ServerCounters{});
    EXPECT_FALSE(s.rounds);
    EXPECT_FALSE(s.tokens_per_round);
    EXPECT_FALSE(s.copies_landed);
    RunReport report;
    report.server = "other";
    report.workloads.push_back({"w", "w.jsonl", s, {}, std::nullopt});
    const json out = report_json(report);
    EXPECT_TRUE(out["workloads"][0]["tokens_per_round"].is_null());
    EXPECT_TRUE(out["workloads"][0]["copies_offered"].is_null());
    EXPECT_TRUE(out["workloads"][0]["identical"].is_null());
    EXPECT_NE(report_text(report).find("tokens per round n/a"), std::string::npos);
}

TEST(BenchServeReplies, SavedRepliesCompareTokenForToken) {
    std::vector<ReplyTrace> traces = {done_trace("a", 0, 1, {1, 2, 3}), done_trace("b", 0, 1, {4, 5})};
    const ReplyBook book = parse_replies(replies_jsonl(traces));
    Identity same = compare_replies(traces, book, "w");
    EXPECT_TRUE(same.identical());
    EXPECT_EQ(same.matched, 2);

    traces[1].token_ids = {4, 6};  // same text, other ids: still a mismatch
    Identity changed = compare_replies(traces, book, "w");
    EXPECT_FALSE(changed.identical());
    EXPECT_EQ(changed.mismatched, std::vector<std::string>{"b"});

    EXPECT_FALSE(compare_replies(traces, book, "other-workload").checked);
    EXPECT_THROW(parse_replies("{\"label\": 1}\n"), std::runtime_error);
}

TEST(BenchServeReplies, WithoutIdsTheTextIsCompared) {
    ReplyTrace t = done_trace("a", 0, 1, {1, 2});
    t.exact = false;
    const ReplyBook book = parse_replies(replies_jsonl({t}));
    EXPECT_FALSE(book.at("w").at("a").contains("token_ids"));
    EXPECT_TRUE(compare_replies({t}, book, "w").identical());
    t.text += "!";
    EXPECT_FALSE(compare_replies({t}, book, "w").identical());
}

TEST(BenchServeUrl, HostPortAndPrefix) {
    Url u = parse_url("http://127.0.0.1:8000");
    EXPECT_EQ(u.host, "127.0.0.1");
    EXPECT_EQ(u.port, "8000");
    EXPECT_EQ(u.prefix, "");
    u = parse_url("http://example.org/api/v1/");
    EXPECT_EQ(u.host, "example.org");
    EXPECT_EQ(u.port, "80");
    EXPECT_EQ(u.prefix, "/api");
    u = parse_url("http://[::1]:9000");
    EXPECT_EQ(u.host, "::1");
    EXPECT_EQ(u.port, "9000");
    EXPECT_THROW(parse_url("https://example.org"), std::invalid_argument);
    EXPECT_THROW(parse_url("http://host:port"), std::invalid_argument);
}

}  // namespace
}  // namespace tf::bench
