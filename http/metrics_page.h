// GET /metrics: the server's counters in Prometheus text format 0.0.4, every
// name prefixed tensorfold_, counters ending in _total, values in base units
// (bytes, seconds). Time to first token and request latency are measured
// here in http/, from the events of each generation (RequestTimings).
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "actors/service.h"
#include "http/prometheus.h"

namespace tf::http {

// Time to first token and request latency of every generation, in seconds.
// Thread-safe: event callbacks on actor threads observe, scrapes snapshot.
class RequestTimings {
public:
    RequestTimings();
    void observe_first_token(std::chrono::duration<double> since_arrival);
    void observe_finished(std::chrono::duration<double> since_arrival);

    struct Snapshot {
        Histogram time_to_first_token;
        Histogram request_latency;
    };
    Snapshot snapshot() const;

private:
    mutable std::mutex mutex_;
    Snapshot histograms_;
};

// The whole /metrics page from one moment's snapshots. Pure.
std::string render_metrics(const actors::ServiceMetrics& service, const actors::RecallReport& recall,
                           const RequestTimings::Snapshot& timings);

}  // namespace tf::http
