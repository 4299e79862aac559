// Lanes: the streams being decoded and the rounds they share. A round is one
// batched forward over the rows of every ready stream (continuous batching:
// streams join and leave between rounds). The engine loop reads
//
//     Round round = lanes.next_round();
//     backend.forward(round.rows, logits);
//     updates = lanes.land(round, logits);
//
// Lanes truncates rejected drafts from the KV cache after landing; it never
// runs a forward itself, so a lane actor can own the backend.
// Not thread-safe (one engine thread).
#pragma once

#include <memory>
#include <vector>

#include "engine/drafter.h"
#include "engine/stream.h"
#include "model/backend.h"

namespace tf::engine {

struct LanesOptions {
    int32_t max_rows_per_round = 512;  // bounds a round's latency when long prompts arrive
    int32_t prefill_chunk = 256;       // most prompt rows one stream adds to a round
};

struct Round {
    std::vector<model::Row> rows;        // every stream's rows, concatenated
    std::vector<Stream*> streams;        // in row order
    std::vector<StreamRows> parts;       // per stream: what it put in
    std::vector<int32_t> first_logits;   // per stream: index of its first logits row
    bool empty() const { return rows.empty(); }
};

// Appends one stream's rows to a round.
void add_to_round(Round& round, Stream* stream, StreamRows part);

class Lanes {
public:
    Lanes(model::Backend& backend, Drafter& drafter, LanesOptions options);

    void add(std::unique_ptr<Stream> stream) { streams_.push_back(std::move(stream)); }
    size_t size() const { return streams_.size(); }
    std::vector<std::unique_ptr<Stream>>& streams() { return streams_; }

    Round next_round();
    std::vector<StreamUpdate> land(const Round& round, const std::vector<float>& logits);

    // Streams that have ended, removed from the lanes. Their KV is still open.
    std::vector<std::unique_ptr<Stream>> take_finished();

private:
    model::Backend& backend_;
    Drafter& drafter_;
    LanesOptions options_;
    std::vector<std::unique_ptr<Stream>> streams_;
};

}  // namespace tf::engine
