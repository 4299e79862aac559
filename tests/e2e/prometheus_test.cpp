// Debian's Prometheus scraping the real server (docs/monitoring.md): the
// landed-copy counter of a regenerated request reaches Prometheus' query API,
// and the rules in deploy/prometheus load and evaluate without errors.
// Skips when `prometheus` is not installed (scripts/install-deps installs it).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "child_process.h"
#include "file_changes.h"
#include "recall_report.h"
#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;

std::string find_in_path(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    for (size_t start = 0; start <= dirs.size();) {
        const size_t end = std::min(dirs.find(':', start), dirs.size());
        const std::string candidate = dirs.substr(start, end - start) + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
        start = end + 1;
    }
    return "";
}

std::string url_encode(const std::string& text) {
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out += static_cast<char>(c);
        } else {
            char hex[4];
            std::snprintf(hex, sizeof hex, "%%%02X", c);
            out += hex;
        }
    }
    return out;
}

// Prometheus started on a loopback port the kernel picks, with its storage in
// `dir`, scraping `target` every second and evaluating the project's rules.
class Prometheus {
public:
    Prometheus(const std::string& binary, const TempDir& dir, const std::string& target)
        : process_(start(binary, dir, target)), storage_{dir / "tsdb", dir / "tsdb/wal"} {
        const std::vector<std::string> listening =
            process_->wait_for_output(std::regex(R"(msg="Listening on" address=127\.0\.0\.1:(\d+))"));
        if (!listening.empty()) port_ = static_cast<uint16_t>(std::stoi(listening[1]));
    }

    uint16_t port() const { return port_; }
    std::string output() const { return process_->output(); }

    // Until `done`, looked at again after each write to the storage (every
    // scrape and every rule evaluation appends to the write-ahead log).
    bool wait_until(const std::function<bool()>& done) const { return wait_for_file_changes(storage_, done); }

    json api(const std::string& target) const {
        const Response r = http_request(port_, "GET", target);
        return r.status == 200 ? json::parse(r.body) : json{{"status", "http " + std::to_string(r.status)}};
    }

    // The instant vector `query` evaluates to now.
    json query(const std::string& promql) const {
        const json reply = api("/api/v1/query?query=" + url_encode(promql));
        return reply.value("status", "") == "success" ? reply["data"]["result"] : json::array();
    }

private:
    static std::unique_ptr<ChildProcess> start(const std::string& binary, const TempDir& dir,
                                               const std::string& target) {
        const std::string config = dir / "prometheus.yml";
        // Made here so that its writes can be watched from the start.
        std::filesystem::create_directories(dir / "tsdb/wal");
        std::ofstream(config) << "global:\n"
                                 "  scrape_interval: 1s\n"
                                 "  evaluation_interval: 1s\n"
                                 "rule_files:\n"
                                 "  - "
                              << source_dir()
                              << "/deploy/prometheus/tensorfold-rules.yml\n"
                                 "scrape_configs:\n"
                                 "  - job_name: tensorfold\n"
                                 "    static_configs:\n"
                                 "      - targets: ['"
                              << target << "']\n";
        return std::make_unique<ChildProcess>(std::vector<std::string>{
            binary, "--config.file=" + config, "--storage.tsdb.path=" + dir / "tsdb",
            "--web.listen-address=127.0.0.1:0", "--log.level=info"});
    }

    std::unique_ptr<ChildProcess> process_;
    std::vector<std::string> storage_;  // the directories Prometheus writes as it scrapes
    uint16_t port_ = 0;
};

std::string sampled_request() {
    return json{{"model", "tinycode"},
                {"prompt", "def merge_sort(items):\n    \"\"\"Sort a list.\"\"\"\n"},
                {"max_tokens", 64},
                {"temperature", 0.7},
                {"seed", 7}}
        .dump();
}

double value_of(const json& sample) { return std::stod(sample["value"][1].get<std::string>()); }

TEST(PrometheusE2e, TheLandedCopyCounterOfARegeneratedRequestReachesPrometheus) {
    const std::string binary = find_in_path("prometheus");
    if (binary.empty()) GTEST_SKIP() << "prometheus is not installed (scripts/install-deps installs it)";
    TempDir dir;
    ServerProcess server({"--recall-dir", dir / "record"});
    ASSERT_TRUE(server.listening()) << server.output();
    Prometheus prometheus(binary, dir, "127.0.0.1:" + std::to_string(server.port()));
    ASSERT_NE(prometheus.port(), 0) << prometheus.output();

    // A scrape before any request gives rate() its starting point; without
    // it, counters first seen after both replies would show no increase.
    json baseline;
    ASSERT_TRUE(prometheus.wait_until([&] {
        baseline = prometheus.query("tensorfold_requests_total{job=\"tensorfold\"} == 0");
        return baseline.size() == 1;
    })) << "no scrape of the idle server\n" << prometheus.output();

    // The second request may only find the first reply once the record's
    // writer has added it, and its landing counters are final once the
    // writer has taken its add too (tests/e2e/recall_test.cpp says why).
    ASSERT_EQ(server.post("/v1/completions", sampled_request()).status, 200);
    wait_for_adds(server, 1);
    ASSERT_EQ(server.post("/v1/completions", sampled_request()).status, 200);
    const json report = wait_for_adds(server, 2);
    ASSERT_GE(report["adds"].get<uint64_t>(), 2u) << report;
    const double landed = report["tokens_landed"].get<double>();
    ASSERT_GT(landed, 0) << "the regenerated request landed no copy: " << report;

    // Scrapes happen on Prometheus' own clock: poll its API until a scrape
    // taken after the second reply shows the count the server reports.
    const std::string landed_query = "sum(tensorfold_recall_copy_tokens_landed_total{job=\"tensorfold\"})";
    json result;
    EXPECT_TRUE(prometheus.wait_until([&] {
        result = prometheus.query(landed_query);
        return result.size() == 1 && value_of(result[0]) == landed;
    })) << "Prometheus answered " << result << " for " << landed_query << ", the server reports " << landed
        << "\n" << prometheus.output();

    // The recording rule over the same counters gives a landing rate for
    // the buckets that copied (the others are left out, not NaN).
    const std::string ratio = "instance_match:tensorfold_recall_copy_landing:ratio_rate15m";
    EXPECT_TRUE(prometheus.wait_until([&] {
        result = prometheus.query(ratio);
        bool all_positive = !result.empty();
        for (const json& sample : result) all_positive = all_positive && value_of(sample) > 0;
        return all_positive;
    })) << ratio << ": " << result;

    // The percentiles docs/monitoring.md shows, over the same scrapes. The
    // window is long because a loaded machine may take minutes to get here,
    // and a window that no longer holds the requests gives no percentile.
    for (const char* family : {"time_to_first_token", "inter_token_latency"}) {
        const std::string p99 = std::string("histogram_quantile(0.99, sum by (le) (rate(tensorfold_") + family +
                                "_seconds_bucket[30m]))) > 0";
        EXPECT_TRUE(prometheus.wait_until([&] { return prometheus.query(p99).size() == 1; })) << p99;
    }

    // Every rule of deploy/prometheus/tensorfold-rules.yml has been evaluated
    // against the real series without an error (health "err" would name a
    // failing expression, e.g. a division producing duplicate series).
    json groups;
    EXPECT_TRUE(prometheus.wait_until([&] {
        groups = prometheus.api("/api/v1/rules")["data"]["groups"];
        bool all_ok = groups.size() == 2;
        for (const json& group : groups) {
            for (const json& rule : group["rules"]) all_ok = all_ok && rule.value("health", "") == "ok";
        }
        return all_ok;
    })) << groups;
    // A healthy writing record fires no alert.
    const json alerts = prometheus.api("/api/v1/alerts")["data"]["alerts"];
    EXPECT_TRUE(alerts.empty()) << alerts;
}

}  // namespace
}  // namespace tf::e2e
