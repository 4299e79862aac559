// The summary of a `scripts/bench-recall` comparison: many `bench-serve
// --json` runs (server mode x concurrency x repetition) folded into medians,
// a Markdown table and an SVG chart. Pure: JSON in, text out; the
// `bench-recall-report` tool (tools/bench_recall_report.cpp) does the files.
//
// Each workload is judged on its last wave: for the two-wave workloads the
// first wave is what fills the record (or the context) and the second is the
// repeat being measured; one-wave workloads have only that wave. See
// docs/benchmarks.md for the protocol.
//
// Runs against a server other than tensorfold (bench-serve's "server":
// "other"; scripts/bench-recall's modes "llama" and "llama-ngram", which are
// llama.cpp's llama-server plain and with --spec-type ngram-mod) are
// measured alike, but their replies cannot be tensorfold's tokens: other
// numerics give other text. Their comparison with the reference is shown
// for information and never counts toward the identity target.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace tf::bench {

// One workload's measured wave in one run.
struct RunSample {
    double tokens_per_s = 0;
    double itl_p50_ms = 0, itl_p99_ms = 0;
    double ttft_p50_ms = 0;
    double tokens_per_chunk = 0;
    std::optional<double> copies_landed;  // null on servers without a record
    int failed = 0;
    std::optional<bool> identical;  // null: no reference given
    int requests = 0;
    int matched = 0;            // replies equal to the reference
    bool other_server = false;  // not tensorfold: the comparison is information only
    bool by_text = false;       // the replies carried no token ids: compared as text
};

// Where a sample belongs. `mode` is the server set-up ("off", "on",
// "read-only", "llama", ...).
struct CellKey {
    std::string mode;
    int concurrency = 0;
    std::string workload;
    bool operator<(const CellKey& o) const {
        return std::tie(mode, concurrency, workload) < std::tie(o.mode, o.concurrency, o.workload);
    }
};

// The runs of one cell folded together: each number is the median over runs.
struct Cell {
    int runs = 0;
    double tokens_per_s = 0;
    double itl_p50_ms = 0, itl_p99_ms = 0;
    double ttft_p50_ms = 0;
    double tokens_per_chunk = 0;
    std::optional<double> copies_landed;
    int failed = 0;                  // summed over runs
    std::optional<bool> identical;   // every run identical (null when none was checked)
    int requests = 0, matched = 0;   // summed over the runs checked against the reference
    bool other_server = false;       // some run was not against tensorfold
    bool by_text = false;            // some run was compared as text (no token ids)
};

class RecallComparison {
public:
    // Adds one bench-serve --json report, run with the server in `mode`.
    // Throws std::runtime_error when the JSON lacks the fields it needs.
    void add_run(const std::string& mode, const nlohmann::json& report);

    // Medians per cell, in key order.
    std::map<CellKey, Cell> cells() const;

    // Markdown: one row per workload and concurrency, tokens/s of each mode
    // with its ratio to the first mode added ("off" in bench-recall), and
    // p50/p99 inter-token latency per mode. The identical column judges
    // tensorfold's runs; other servers' matches follow it, as information,
    // with a note under the table.
    std::string markdown() const;
    // Two charts side by side: tokens/s, and p50/p99 inter-token latency,
    // grouped by workload and concurrency, one colour per mode.
    std::string svg() const;
    // The targets for `on` against `off` (tokens/s ratios per
    // workload and concurrency, p99 inter-token latency, identity), each
    // marked met or missed with the measured value.
    std::string targets(const std::string& on = "on", const std::string& off = "off") const;
    // The targets for `on` against llama-server with n-gram drafting
    // (`llama`, default "llama-ngram"): regenerate and new-session at
    // concurrency 1 and 4. Empty when no run of `llama` was added.
    std::string llama_targets(const std::string& on = "on", const std::string& llama = "llama-ngram") const;

    const std::vector<std::string>& modes() const { return modes_; }

private:
    std::map<CellKey, std::vector<RunSample>> samples_;
    std::vector<std::string> modes_;  // in the order first seen
};

// The median of `values` (the mean of the middle two for an even count); NaN when empty.
double median_of(std::vector<double> values);

}  // namespace tf::bench
