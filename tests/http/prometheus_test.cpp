// Prometheus text format 0.0.4.
#include <gtest/gtest.h>

#include "http/prometheus.h"

namespace tf::http {
namespace {

TEST(MetricsText, CounterFamilyIsNamedAsItsTotalSample) {
    // Text format 0.0.4: "# TYPE http_requests_total counter" then
    // "http_requests_total 1027"; a family without _total leaves the sample untyped.
    MetricsText m;
    m.counter("tensorfold_rounds_total", "Rounds run.", 12);
    EXPECT_EQ(m.text(),
              "# HELP tensorfold_rounds_total Rounds run.\n# TYPE tensorfold_rounds_total counter\ntensorfold_rounds_total 12\n");
}

TEST(MetricsText, ACounterNamedWithoutTotalGetsIt) {
    MetricsText m;
    m.counter("tensorfold_rounds", "Rounds run.", 1);
    EXPECT_EQ(m.text(), "# HELP tensorfold_rounds_total Rounds run.\n# TYPE tensorfold_rounds_total counter\ntensorfold_rounds_total 1\n");
}

TEST(MetricsText, LabelsAreEscapedAndFamiliesDeclaredOnce) {
    MetricsText m;
    m.gauge("tensorfold_recall_state", "State.", 1, {{"state", "writing"}});
    m.gauge("tensorfold_recall_state", "State.", 0, {{"state", "a\"b\\c\nd"}});
    EXPECT_EQ(m.text(),
              "# HELP tensorfold_recall_state State.\n# TYPE tensorfold_recall_state gauge\n"
              "tensorfold_recall_state{state=\"writing\"} 1\n"
              "tensorfold_recall_state{state=\"a\\\"b\\\\c\\nd\"} 0\n");
}

TEST(MetricsText, HistogramBucketsAreCumulative) {
    Histogram h({0.1, 1});
    h.observe(0.05);
    h.observe(0.5);
    h.observe(0.5);
    h.observe(7);
    MetricsText m;
    m.histogram("tensorfold_request_seconds", "Latency.", h);
    EXPECT_EQ(m.text(),
              "# HELP tensorfold_request_seconds Latency.\n# TYPE tensorfold_request_seconds histogram\n"
              "tensorfold_request_seconds_bucket{le=\"0.10000000000000001\"} 1\n"
              "tensorfold_request_seconds_bucket{le=\"1\"} 3\n"
              "tensorfold_request_seconds_bucket{le=\"+Inf\"} 4\n"
              "tensorfold_request_seconds_sum 8.0500000000000007\n"
              "tensorfold_request_seconds_count 4\n");
}

TEST(MetricsText, ABoundaryValueFallsInItsBucket) {
    Histogram h({1, 2});
    h.observe(1);
    EXPECT_EQ(h.counts[0], 1u);
}

}  // namespace
}  // namespace tf::http
