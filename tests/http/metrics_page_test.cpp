// GET /metrics from one moment's snapshots: Prometheus text format 0.0.4,
// tensorfold_ prefix, _total counters, base units.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "http/metrics_page.h"

namespace tf::http {
namespace {

// The value of the sample line that starts with `series` followed by a space.
double sample(const std::string& text, const std::string& series) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    }
    ADD_FAILURE() << "no sample " << series << " in\n" << text;
    return -1;
}

std::string page(recall::RecallState state) {
    actors::ServiceMetrics service;
    service.requests_running = 2;
    service.requests_waiting = 1;
    service.rounds_total = 40;
    service.lone_rounds_total = 25;
    service.prompt_tokens_total = 100;
    service.generation_tokens_total = 64;
    service.drafts.own_drafted = 12;
    service.drafts.own_landed = 9;
    actors::RecallReport recall;
    recall.enabled = state != recall::RecallState::off;
    recall.stats.state = state;
    recall.stats.disk_bytes = 4096;
    recall.stats.memory_bytes = 16u << 20;
    recall.stats.chunks = 1;
    recall.stats.ids = 1024;
    recall.stats.landing.buckets[1] = {
        .copies_offered = 2, .tokens_drafted = 40, .tokens_landed = 33, .expected_landed = 16};
    recall.stats.landing.by_history[1][2] = {
        .copies_offered = 2, .tokens_drafted = 40, .tokens_landed = 33, .landing_probability = 0.75};
    recall.stats.landing.own_tokens_displaced = 6;
    recall.stats.landing.copies_same_as_own = 3;
    RequestTimings timings;
    timings.observe_first_token(std::chrono::milliseconds(20));
    timings.observe_finished(std::chrono::milliseconds(300));
    return render_metrics(service, recall, timings.snapshot(), {.kv_type = "f16", .kv_bytes_per_token = 114688});
}

TEST(MetricsPage, RecallStateIsOneGaugePerStateWithTheCurrentAtOne) {
    const std::string text = page(recall::RecallState::paused_delete);
    EXPECT_EQ(sample(text, R"(tensorfold_recall_state{state="paused-delete"})"), 1);
    for (const char* other : {"off", "writing", "read-only", "following", "paused-disk"}) {
        EXPECT_EQ(sample(text, std::string(R"(tensorfold_recall_state{state=")") + other + "\"}"), 0) << other;
    }
}

TEST(MetricsPage, RecallOffIsTheOffState) {
    EXPECT_EQ(sample(page(recall::RecallState::off), R"(tensorfold_recall_state{state="off"})"), 1);
}

TEST(MetricsPage, RecordSizesAreInBytes) {
    const std::string text = page(recall::RecallState::writing);
    EXPECT_EQ(sample(text, "tensorfold_recall_disk_bytes"), 4096);
    EXPECT_EQ(sample(text, "tensorfold_recall_memory_bytes"), 16u << 20);
    EXPECT_EQ(sample(text, "tensorfold_recall_chunks"), 1);
    EXPECT_EQ(sample(text, "tensorfold_recall_ids"), 1024);
}

TEST(MetricsPage, CopyCountersCarryTheMatchBucketLabel) {
    const std::string text = page(recall::RecallState::writing);
    EXPECT_EQ(sample(text, R"(tensorfold_recall_copies_offered_total{match="32-63"})"), 2);
    EXPECT_EQ(sample(text, R"(tensorfold_recall_copy_tokens_drafted_total{match="32-63"})"), 40);
    EXPECT_EQ(sample(text, R"(tensorfold_recall_copy_tokens_landed_total{match="32-63"})"), 33);
    EXPECT_EQ(sample(text, R"(tensorfold_recall_copy_tokens_landed_total{match="16-31"})"), 0);
    EXPECT_EQ(sample(text, R"(tensorfold_recall_copy_tokens_landed_total{match="64+"})"), 0);
}

TEST(MetricsPage, CopiesAreAlsoSplitByHistoryWithTheirCost) {
    const std::string text = page(recall::RecallState::writing);
    EXPECT_EQ(sample(text, R"(tensorfold_recall_history_copies_offered_total{match="32-63",history="after_short"})"),
              2);
    EXPECT_EQ(sample(text, R"(tensorfold_recall_history_copies_offered_total{match="32-63",history="first"})"), 0);
    EXPECT_EQ(
        sample(text, R"(tensorfold_recall_history_copy_tokens_landed_total{match="32-63",history="after_short"})"), 33);
    EXPECT_EQ(sample(text, R"(tensorfold_recall_copy_landing_probability{match="32-63",history="after_short"})"), 0.75);
    EXPECT_EQ(sample(text, "tensorfold_recall_own_tokens_displaced_total"), 6);
    EXPECT_EQ(sample(text, "tensorfold_recall_copies_same_as_own_total"), 3);
}

TEST(MetricsPage, ServiceCountersAndGauges) {
    const std::string text = page(recall::RecallState::writing);
    EXPECT_EQ(sample(text, "tensorfold_own_draft_tokens_drafted_total"), 12);
    EXPECT_EQ(sample(text, "tensorfold_own_draft_tokens_landed_total"), 9);
    EXPECT_EQ(sample(text, "tensorfold_prompt_tokens_total"), 100);
    EXPECT_EQ(sample(text, "tensorfold_generation_tokens_total"), 64);
    EXPECT_EQ(sample(text, "tensorfold_requests_running"), 2);
    EXPECT_EQ(sample(text, "tensorfold_requests_waiting"), 1);
    EXPECT_EQ(sample(text, "tensorfold_rounds_total"), 40);
    EXPECT_EQ(sample(text, "tensorfold_lone_stream_rounds_total"), 25);
}

TEST(MetricsPage, TheKvCacheTypeAndBytesPerTokenAreReportedWhenKnown) {
    const std::string text = page(recall::RecallState::writing);
    EXPECT_EQ(sample(text, R"(tensorfold_kv_cache_info{type="f16"})"), 1);
    EXPECT_EQ(sample(text, "tensorfold_kv_cache_bytes_per_token"), 114688);
    EXPECT_EQ(render_metrics({}, {}, RequestTimings().snapshot()).find("kv_cache"), std::string::npos);
}

TEST(MetricsPage, LatencyHistogramsAreInSeconds) {
    const std::string text = page(recall::RecallState::writing);
    EXPECT_EQ(sample(text, "tensorfold_time_to_first_token_seconds_count"), 1);
    EXPECT_DOUBLE_EQ(sample(text, "tensorfold_time_to_first_token_seconds_sum"), 0.02);
    EXPECT_EQ(sample(text, R"(tensorfold_time_to_first_token_seconds_bucket{le="0.025000000000000001"})"), 1);
    EXPECT_EQ(sample(text, R"(tensorfold_request_latency_seconds_bucket{le="0.25"})"), 0);
    EXPECT_EQ(sample(text, R"(tensorfold_request_latency_seconds_bucket{le="0.5"})"), 1);
}

TEST(MetricsPage, EveryLineIsACommentOrAPrefixedSample) {
    const std::regex sample_line(R"(tensorfold_[a-z_]+(\{[a-z]+="[^"]*"(,[a-z]+="[^"]*")*\})? [-+0-9.eEInfa]+)");
    std::istringstream lines(page(recall::RecallState::writing));
    std::string line;
    int samples = 0;
    while (std::getline(lines, line)) {
        if (line.rfind("# HELP tensorfold_", 0) == 0 || line.rfind("# TYPE tensorfold_", 0) == 0) continue;
        EXPECT_TRUE(std::regex_match(line, sample_line)) << line;
        ++samples;
    }
    EXPECT_GT(samples, 30);
}

// A landed copy brings several tokens in one event: each gets an equal share
// of the gap, so the count is the number of tokens and the sum the gap.
TEST(MetricsPage, InterTokenLatencySharesAnEventsGapAmongItsTokens) {
    RequestTimings timings;
    timings.observe_token_gap(std::chrono::milliseconds(2), 1);
    timings.observe_token_gap(std::chrono::milliseconds(4), 4);
    const std::string text = render_metrics({}, {}, timings.snapshot());
    EXPECT_EQ(sample(text, "tensorfold_inter_token_latency_seconds_count"), 5);
    EXPECT_DOUBLE_EQ(sample(text, "tensorfold_inter_token_latency_seconds_sum"), 0.006);
    EXPECT_EQ(sample(text, R"(tensorfold_inter_token_latency_seconds_bucket{le="0.001"})"), 4);
    EXPECT_EQ(sample(text, R"(tensorfold_inter_token_latency_seconds_bucket{le="0.0025000000000000001"})"), 5);
}

}  // namespace
}  // namespace tf::http

