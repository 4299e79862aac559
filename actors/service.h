// Service: what the HTTP layer asks of the running server, in native types.
// The actor system (actors/actor_service.h) implements it; http/ holds a
// Service& and never sees CAF, the engine's threads or the record's files.
//
// Thread-safety: every member function is thread-safe. Event callbacks run
// on actor threads, one request's events in order, never two at once for
// the same request; they must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/host_sampling.h"
#include "engine/request.h"
#include "recall/record.h"

namespace tf::actors {

// One update of a running request: what its latest round landed.
struct StreamEvent {
    std::vector<model::TokenId> tokens;  // landed this round
    std::string text;                    // their text; stop strings held back and never sent
    engine::FinishReason finish = engine::FinishReason::running;  // the last event has finish != running
    int32_t resume_point = 0;            // prompt tokens the prompt cache already held (last event)
    engine::DraftCounters counters;      // the request's draft counters (last event)
    std::vector<engine::TokenLogprob> logprobs;  // one per token, when the request asked for them
};

using EventCallback = std::function<void(StreamEvent)>;
using RequestHandle = uint64_t;

// submit() when the server is at capacity: HTTP 503 with Retry-After.
struct Overloaded : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Counters and gauges for /metrics, sampled at one moment.
struct ServiceMetrics {
    int64_t requests_running = 0;
    int64_t requests_waiting = 0;
    int64_t requests_total = 0;
    int64_t rounds_total = 0;
    int64_t lone_rounds_total = 0;        // of which run by the lone-stream driver
    int64_t prompt_tokens_total = 0;      // prompt tokens of finished requests
    int64_t prompt_tokens_computed = 0;   // of which run through the model (past the resume point)
    int64_t generation_tokens_total = 0;
    engine::DraftCounters drafts;         // own-context and record drafts, summed over finished requests
};

// The record as GET /v1/recall reports it.
struct RecallReport {
    bool enabled = false;  // false: Recall is off; the rest is empty
    recall::RecordStats stats;
};

class Service {
public:
    virtual ~Service() = default;

    // Starts a request; events arrive through `on_event`. Throws
    // std::invalid_argument naming the field for a request that can never
    // run, Overloaded when the server is full.
    virtual RequestHandle submit(engine::GenerationRequest request, EventCallback on_event) = 0;
    // Ends a request at its next round (a client that went away); its last
    // event has finish == cancelled. Unknown or finished handles are ignored.
    virtual void cancel(RequestHandle request) = 0;

    virtual RecallReport recall_report() = 0;
    // DELETE /v1/recall. Recall off: outcome refused with a message saying so.
    virtual recall::EraseResult delete_recall() = 0;
    virtual ServiceMetrics metrics() = 0;

    // Finishes or cancels streams, flushes the record's writer, releases
    // the lock. Idempotent.
    virtual void shutdown() = 0;
};

}  // namespace tf::actors
