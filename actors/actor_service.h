// The actor system that runs the engine (CAF 0.17): a stream actor per
// request, one recall_writer (the only writer of the record), a pool of
// recall_reader actors (lookups), the gpu_lane (the only actor that touches
// the backend: it forms rounds from ready rows) and a supervisor (record
// lifecycle: DELETE, free-disk monitor, pause/resume).
//
// start_actor_service() returns the Service (actors/service.h) that http/
// talks to. Thread-safety: as Service.
#pragma once

#include <chrono>
#include <memory>

#include "actors/service.h"
#include "engine/draft_window.h"
#include "engine/engine.h"
#include "model/backend.h"
#include "recall/record.h"
#include "tokenizer/tokenizer.h"

namespace tf::actors {

struct ActorServiceOptions {
    model::Backend* backend = nullptr;   // outlives the service; only the gpu_lane uses it
    tokenizer::Tokenizer* tokenizer = nullptr;  // reply text and stop strings; may be null (ids only)
    recall::Record* record = nullptr;    // null: Recall off
    engine::CostCurve cost = engine::CostCurve::flat(64);
    engine::EngineOptions engine;        // max_streams, ctx_size, prompt cache, drafter, lanes
    int reader_threads = 1;              // recall_reader pool size
    int max_waiting = 256;               // queued requests beyond this: Overloaded
    bool lone_driver = true;             // a lone stream's rounds run on the lane, back to back
    std::chrono::milliseconds disk_check_interval{10000};  // supervisor's free-disk probe
};

std::unique_ptr<Service> start_actor_service(ActorServiceOptions options);

// The long-lived actors, spawned on `system`. Exposed so tests can run them
// under CAF's deterministic test scheduler (then `detach_lane` is false).
struct LongLivedActors;
}  // namespace tf::actors

#include "actors/messages.h"

namespace tf::actors {

struct LongLivedActors {
    lane_actor lane;
    writer_actor writer;                // invalid when Recall is off
    std::vector<reader_actor> readers;  // empty when Recall is off
    supervisor_actor supervisor;

    void shutdown();  // exit messages to all of them
};

LongLivedActors spawn_long_lived_actors(caf::actor_system& system, const ActorServiceOptions& options,
                                        bool detach_lane);

}  // namespace tf::actors
