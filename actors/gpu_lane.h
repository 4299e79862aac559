// gpu_lane: the only actor that touches the backend. It opens and releases
// streams' KV caches (with the prompt cache), collects the rows streams send,
// and, once every stream it has answered has sent its next rows (or ended),
// has its engine::RoundDriver run the round and sends each stream its
// verdict. Streams beyond max_streams wait in order for a free slot. A stream
// alone on the lane may lend itself to it (LentStream in messages.h): the
// lane then has the same driver draft, run and land its rounds, back to back.
// Rounds, verdicts and landing are engine code; this actor only moves messages.
#pragma once

#include <memory>

#include "actors/messages.h"
#include "engine/expert_costs.h"
#include "engine/prompt_cache.h"
#include "model/backend.h"

namespace tf::actors {

struct LaneOptions {
    model::Backend* backend = nullptr;
    int32_t context_size = 0;
    int32_t max_streams = 16;
    int64_t prompt_cache_tokens = 1 << 16;
    bool lone_driver = true;  // invite a lone stream to lend itself
    // A mixture's round pricing (CostCurve::experts()), fed by the lane's rounds.
    std::shared_ptr<engine::ExpertCosts> experts;
};

lane_actor spawn_gpu_lane(caf::actor_system& system, LaneOptions options, bool detached);

}  // namespace tf::actors
