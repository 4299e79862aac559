// bench-serve's numbers: percentiles, the summary of a set of replies, the
// deltas of tensorfold's counters, the comparison with a reference run, and
// the report as text or JSON. Pure code, no network; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_stream.h"

namespace tf::bench {

// The p-th percentile (0..100) of `values`, linearly interpolated between
// the two nearest ranks (numpy's default). NaN for no values.
double percentile(std::vector<double> values, double p);

struct Percentiles {
    double median = 0, p90 = 0, p99 = 0;  // NaN when there were no samples
};
Percentiles percentiles(const std::vector<double>& values);

// tensorfold's counters at one moment, from GET /metrics (Prometheus text)
// and GET /v1/recall (JSON). Each is absent when the server did not say.
struct ServerCounters {
    std::optional<double> rounds, generation_tokens, own_drafted, own_landed;
    std::optional<double> copies_offered, copies_missed, copy_tokens_drafted, copy_tokens_landed;
    std::string recall_state;  // "off", "writing", "read_only", ...; empty when unknown
    std::optional<double> recall_adds;
    bool tensorfold() const { return rounds.has_value() || copies_offered.has_value(); }
};

// The sum of every sample of metric `name` (all label sets) in a Prometheus
// text page; absent when the page has no such sample.
std::optional<double> metric_sum(const std::string& page, const std::string& name);
// Adds what /metrics says to `counters`.
void read_metrics(ServerCounters& counters, const std::string& page);
// Adds what /v1/recall says to `counters` (its landing counters win over
// /metrics', which lack copies missed).
void read_recall(ServerCounters& counters, const std::string& body);

// What one stretch of the run (a workload, or one wave of it) measured.
struct Summary {
    int64_t requests = 0, failed = 0;
    double duration_s = 0;  // first request sent to last reply done
    int64_t output_tokens = 0;
    double requests_per_s = 0, output_tokens_per_s = 0;
    Percentiles ttft_ms, itl_ms;
    double tokens_per_chunk = 0;  // output tokens per content chunk
    bool exact_tokens = false;    // every reply carried token ids
    // Deltas of tensorfold's counters over the stretch; absent elsewhere.
    std::optional<double> rounds, tokens_per_round, own_drafted, own_landed;
    std::optional<double> copies_offered, copies_landed, copy_tokens_drafted, copy_tokens_landed;
    std::string recall_state;
};

// Summarizes `traces` (all with the same workload); `before`/`after`
// bracket them on the server.
Summary summarize(const std::vector<ReplyTrace>& traces, const ServerCounters& before, const ServerCounters& after);

// Replies of a run, one JSON line each: {"workload", "label", "text",
// "token_ids" (when exact)}, for --save-replies and --reference.
std::string replies_jsonl(const std::vector<ReplyTrace>& traces);
// workload -> label -> the line's object. Throws std::runtime_error naming
// the line on bad input.
using ReplyBook = std::map<std::string, std::map<std::string, nlohmann::json>>;
ReplyBook parse_replies(const std::string& jsonl);

// How the replies of one workload compare with the reference.
struct Identity {
    bool checked = false;  // the reference holds this workload
    int64_t matched = 0;
    std::vector<std::string> mismatched;  // labels that differ, failed, or the reference lacks
    bool identical() const { return checked && mismatched.empty(); }
};
// Token ids are compared when both sides have them, else the text.
Identity compare_replies(const std::vector<ReplyTrace>& traces, const ReplyBook& reference, const std::string& workload);

struct WorkloadReport {
    std::string name, file;
    Summary all;
    std::vector<std::pair<int, Summary>> waves;  // only when the file has several waves
    std::optional<Identity> identity;            // only with --reference
};

struct RunReport {
    std::string url;
    std::string server;  // "tensorfold" or "other"
    std::string mode;    // "concurrency N" or "arrivals"
    int concurrency = 0; // 0 with --arrivals
    std::vector<WorkloadReport> workloads;
};

nlohmann::ordered_json report_json(const RunReport& report);
std::string report_text(const RunReport& report);

}  // namespace tf::bench
