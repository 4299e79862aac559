// bench-serve's workload files and how make-workloads builds them.
//
// A workload is a JSONL file, one request a line:
//   {"label": "flatten/greedy/again", "route": "/v1/completions",
//    "body": {"model": "tinycode", "prompt": "...", "max_tokens": 96, "temperature": 0},
//    "wave": 1, "arrival": 0.734}
// label: names the request in reports and reference files (unique in a file);
// route: "/v1/completions" or "/v1/chat/completions"; body: the request as
// sent (bench-serve adds "stream", "stream_options" and "return_token_ids");
// wave (optional, default 0): a wave starts only once every request of the
// waves before it has finished; arrival (optional): seconds after its wave
// starts at which --arrivals sends it.
//
// The builders call the served model through `CallModel`, so they are pure
// apart from it and deterministic for a seed when the server is (greedy or
// seeded sampling).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tf::bench {

struct WorkloadRequest {
    std::string label;
    std::string route;
    nlohmann::json body;
    int wave = 0;
    std::optional<double> arrival;
};

struct Workload {
    std::string name;  // the file's stem
    std::vector<WorkloadRequest> requests;
};

// One line (no newline) of a workload file.
std::string workload_line(const WorkloadRequest& request);
// Parses a workload file's text; throws std::runtime_error naming the line.
std::vector<WorkloadRequest> parse_workload(const std::string& jsonl);

// What the model answered at build time.
struct ModelReply {
    std::string text;
    std::vector<int32_t> token_ids;
    bool has_ids = false;
};
using CallModel = std::function<ModelReply(const std::string& route, const nlohmann::json& body)>;

struct BuildOptions {
    std::string model;
    uint64_t seed = 1;
    int requests = 16;    // per workload (rounded down to whole pairs or conversations where they come in pairs)
    int max_tokens = 96;
    double rate = 4.0;    // mean arrivals per second, for the "arrival" times
};

// The workload names make-workloads knows, in the order it builds them.
const std::vector<std::string>& workload_names();

// Builds one workload by name (see workload_names()); `log` gets one line
// per notable step (e.g. how much the later replies re-type).
Workload build_workload(const std::string& name, const BuildOptions& options, const CallModel& call,
                        const std::function<void(const std::string&)>& log);

// Share of the tokens of `later` that sit in a run of at least `run` tokens
// that also appears in `earlier`: how much of a reply re-types an older one.
double retyped_share(const std::vector<int32_t>& earlier, const std::vector<int32_t>& later, size_t run = 16);
// The same on text, for servers without token ids (runs of `run` bytes).
double retyped_share(const std::string& earlier, const std::string& later, size_t run = 48);

}  // namespace tf::bench
