// The Recall comparison's folding of bench-serve runs: medians over runs,
// the measured wave, ratios against Recall off, the targets and the chart.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/recall_report.h"

namespace tf::bench {
namespace {

using nlohmann::json;

// A bench-serve --json report with one workload whose last wave has the
// given speed and latency; the first wave is deliberately different so a
// test notices when the wrong wave is read.
json run(int concurrency, const std::string& workload, double tokens_per_s, double p50, double p99,
         json identical = true, json copies = nullptr) {
    json first = {{"wave", 0}, {"output_tokens_per_s", 1.0}, {"itl_ms", {{"median", 999}, {"p99", 999}}}};
    json last = {{"wave", 1},
                 {"output_tokens_per_s", tokens_per_s},
                 {"itl_ms", {{"median", p50}, {"p90", p99}, {"p99", p99}}},
                 {"ttft_ms", {{"median", 10}, {"p90", 10}, {"p99", 10}}},
                 {"tokens_per_chunk", 1.5},
                 {"copies_landed", copies}};
    json entry = {{"name", workload}, {"failed", 0}, {"identical", identical}, {"waves", json::array({first, last})}};
    return {{"concurrency", concurrency}, {"workloads", json::array({entry})}};
}

TEST(RecallReport, MedianOfOddAndEvenCountsSkipsMissingValues) {
    EXPECT_EQ(median_of({3, 1, 2}), 2);
    EXPECT_EQ(median_of({4, 1, 3, 2}), 2.5);
    EXPECT_EQ(median_of({NAN, 5}), 5);
    EXPECT_TRUE(std::isnan(median_of({})));
}

TEST(RecallReport, EachCellIsTheMedianOfItsRunsOnTheLastWave) {
    RecallComparison c;
    c.add_run("off", run(1, "regenerate", 100, 5, 9));
    c.add_run("off", run(1, "regenerate", 300, 7, 30));
    c.add_run("off", run(1, "regenerate", 200, 6, 10));
    const auto cells = c.cells();
    ASSERT_EQ(cells.size(), 1u);
    const Cell& cell = cells.at({"off", 1, "regenerate"});
    EXPECT_EQ(cell.runs, 3);
    EXPECT_EQ(cell.tokens_per_s, 200);
    EXPECT_EQ(cell.itl_p50_ms, 6);
    EXPECT_EQ(cell.itl_p99_ms, 10);
    EXPECT_EQ(cell.identical, std::optional<bool>(true));
    EXPECT_FALSE(cell.copies_landed.has_value());
}

TEST(RecallReport, AOneWaveWorkloadIsMeasuredOnItsOwnFields) {
    json report = {{"concurrency", 1},
                   {"workloads",
                    json::array({json{{"name", "fresh"},
                                      {"output_tokens_per_s", 42.0},
                                      {"itl_ms", {{"median", 3}, {"p99", 8}}},
                                      {"waves", json::array()}}})}};
    RecallComparison c;
    c.add_run("off", report);
    const Cell cell = c.cells().at({"off", 1, "fresh"});
    EXPECT_EQ(cell.tokens_per_s, 42);
    EXPECT_EQ(cell.itl_p99_ms, 8);
    EXPECT_FALSE(cell.identical.has_value());
}

TEST(RecallReport, OneDifferingRunMakesTheCellNotIdentical) {
    RecallComparison c;
    c.add_run("on", run(4, "fresh", 100, 5, 9, true, 0));
    c.add_run("on", run(4, "fresh", 100, 5, 9, false, 2));
    const Cell cell = c.cells().at({"on", 4, "fresh"});
    EXPECT_EQ(cell.identical, std::optional<bool>(false));
    EXPECT_EQ(cell.copies_landed, std::optional<double>(1));
}

TEST(RecallReport, TableShowsRatiosAgainstTheFirstModeSeen) {
    RecallComparison c;
    c.add_run("off", run(1, "regenerate", 100, 5, 9));
    c.add_run("on", run(1, "regenerate", 350, 2, 9.5, true, 12));
    const std::string table = c.markdown();
    EXPECT_NE(table.find("| regenerate | 1 | 100 | 350 (3.50\u00d7) |"), std::string::npos) << table;
    EXPECT_NE(table.find("5.00 / 9.00"), std::string::npos) << table;
    EXPECT_NE(table.find("on 12"), std::string::npos) << table;
    EXPECT_NE(table.find("| yes |"), std::string::npos) << table;
}

TEST(RecallReport, TargetsReportMetAndMissedWithTheMeasuredRatio) {
    RecallComparison c;
    c.add_run("off", run(1, "regenerate", 100, 5, 9));
    c.add_run("on", run(1, "regenerate", 310, 2, 9));
    c.add_run("off", run(1, "fresh", 100, 5, 10));
    c.add_run("on", run(1, "fresh", 95, 5, 12));
    const std::string t = c.targets();
    EXPECT_NE(t.find("regenerate, concurrency 1: at least 3x: met (c=1 3.10\u00d7)"), std::string::npos) << t;
    EXPECT_NE(t.find("regenerate, concurrency 16: at least 2x: not measured"), std::string::npos) << t;
    EXPECT_NE(t.find("fresh: at least 0.97x: **missed** (c=1 0.95\u00d7)"), std::string::npos) << t;
    EXPECT_NE(t.find("**missed** (worst 1.20\u00d7, fresh c=1)"), std::string::npos) << t;
    EXPECT_NE(t.find("identical tokens in every run and mode: met"), std::string::npos) << t;
}

TEST(RecallReport, ChartHasABarPerModeAndCellAndEscapesNames) {
    RecallComparison c;
    c.add_run("off", run(1, "a<b", 100, 5, 9));
    c.add_run("on", run(1, "a<b", 200, 4, 8));
    const std::string svg = c.svg();
    EXPECT_EQ(svg.rfind("<svg", 0), 0u);
    EXPECT_NE(svg.find("a&lt;b c=1"), std::string::npos);
    size_t bars = 0;
    for (size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 1)) ++bars;
    EXPECT_EQ(bars, 4u);  // two modes, in two charts
}

TEST(RecallReport, RefusesWhatIsNotABenchServeReport) {
    RecallComparison c;
    EXPECT_THROW(c.add_run("off", json::object()), std::runtime_error);
    EXPECT_THROW(c.add_run("off", json{{"workloads", json::array()}, {"concurrency", nullptr}}), std::runtime_error);
    EXPECT_THROW(c.add_run("off", json{{"concurrency", 1}, {"workloads", json::array({json{{"name", "x"}}})}}),
                 std::runtime_error);
    EXPECT_THROW(c.add_run("off", json{{"concurrency", 1}, {"workloads", json::array({json{{"waves", json::array()}}})}}),
                 std::runtime_error);
}

}  // namespace
}  // namespace tf::bench
