// What `tensorfold bench-serve` and `tensorfold bench-serve make-workloads`
// were asked to do. Plain data, filled by parse_command_line
// (config/command_line.h); tools/bench_serve.cpp runs them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tf::config {

// Flags both share: where the server is and how to talk to it.
struct BenchServerOptions {
    std::string url = "http://127.0.0.1:8000";  // --url: base URL, http only; a path prefix is kept
    std::string model;                          // --model: replaces each body's "model" (empty: keep it)
    std::string api_key;                        // --api-key: sent as "Authorization: Bearer KEY"
    double timeout_s = 300;                     // --timeout: longest wait for one reply, in seconds
};

// `tensorfold bench-serve WORKLOAD.jsonl...`
struct BenchServeOptions {
    BenchServerOptions server;
    std::vector<std::string> workloads;  // JSONL files, one workload each (named by the file's stem)
    int concurrency = 1;                 // --concurrency: requests in flight at once (ignored with --arrivals)
    bool arrivals = false;               // --arrivals: send each request at its "arrival" time instead
    bool json = false;                   // --json: one JSON object on stdout instead of the text report
    std::string reference;               // --reference FILE: replies of an earlier run to compare against
    std::string save_replies;            // --save-replies FILE: write this run's replies there
    bool token_ids = true;               // off with --no-token-ids: do not send "return_token_ids"
};

// `tensorfold bench-serve make-workloads --out DIR`
struct MakeWorkloadsOptions {
    BenchServerOptions server;
    std::string out_dir;               // --out: where NAME.jsonl files are written (created if missing)
    uint64_t seed = 1;                 // --seed: picks tasks, seeds and arrival times
    int requests = 16;                 // --requests: requests per workload
    int max_tokens = 96;               // --max-tokens: per request
    double rate = 4.0;                 // --rate: mean arrivals per second written as "arrival" times
    std::vector<std::string> only;     // --workloads: names to build (empty: all)
};

}  // namespace tf::config
