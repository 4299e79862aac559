// stream: one actor per request, a shell around engine::Stream. It asks the
// gpu_lane for a KV cache, sends its rows each round, lands the verdicts,
// builds the next draft (own context here, record copies through a
// recall_reader), reports events to the HTTP layer, and on the last round
// hands its ids to the recall_writer and its KV back to the lane.
#pragma once

#include <vector>

#include "actors/messages.h"
#include "engine/drafter.h"
#include "engine/lanes.h"
#include "engine/text_decoder.h"

namespace tf::actors {

struct StreamOptions {
    uint64_t handle = 0;
    engine::GenerationRequest request;
    EventCallback on_event;
    int32_t context_size = 0;
    int32_t prefill_chunk = engine::LanesOptions{}.prefill_chunk;
    const engine::Drafter* drafter = nullptr;  // immutable; shared by every stream actor
    engine::TextDecoderFactory decoders;
    lane_actor lane;
    std::vector<reader_actor> readers;  // empty: Recall off
    writer_actor writer;                // invalid: Recall off
};

stream_actor spawn_stream(caf::actor_system& system, StreamOptions options);

}  // namespace tf::actors
