// GET /metrics: the server's counters in Prometheus text format 0.0.4, every
// name prefixed tensorfold_, counters ending in _total, values in base units
// (bytes, seconds). Time to first token, inter-token latency and request
// latency are measured here in http/, from the events of each generation
// (RequestTimings).
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "actors/service.h"
#include "http/prometheus.h"

namespace tf::http {

// Time to first token, inter-token latency and request latency of every
// generation, in seconds.
// Thread-safe: event callbacks on actor threads observe, scrapes snapshot.
class RequestTimings {
public:
    RequestTimings();
    void observe_first_token(std::chrono::duration<double> since_arrival);
    void observe_finished(std::chrono::duration<double> since_arrival);
    // One stream event after the first token: `since_previous` is the time
    // since the stream's previous token event. A landed draft brings several
    // tokens at once; each of them counts with an equal share of the gap, so
    // the histogram's count equals the tokens after each stream's first.
    void observe_token_gap(std::chrono::duration<double> since_previous, size_t tokens);

    struct Snapshot {
        Histogram time_to_first_token;
        Histogram request_latency;
        Histogram inter_token_latency;
    };
    Snapshot snapshot() const;

private:
    mutable std::mutex mutex_;
    Snapshot histograms_;
};

// What the server was started with, reported beside the counters.
struct ServedFacts {
    std::string kv_type;             // the KV cache's element type ("f16", ...); empty: not reported
    int64_t kv_bytes_per_token = 0;  // one position's keys and values, every layer
};

// The whole /metrics page from one moment's snapshots. Pure.
std::string render_metrics(const actors::ServiceMetrics& service, const actors::RecallReport& recall,
                           const RequestTimings::Snapshot& timings, const ServedFacts& facts = {});

}  // namespace tf::http
