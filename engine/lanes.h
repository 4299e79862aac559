// Lanes: the streams being decoded and the rounds they share. A round is one
// batched forward over the rows of every ready stream (continuous batching:
// streams join and leave between rounds). The engine loop reads
//
//     Round round = lanes.next_round();
//     backend.forward(round.rows, round.samplers, outputs);
//     updates = lanes.land(round, outputs.tokens);
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
    // Every stream in a round waits for the round's forward: the rows of a
    // round bound how long decoding streams stall while a long prompt goes in.
    int32_t max_rows_per_round = 512;
    // Most prompt rows one stream adds to a round: as many as a round holds,
    // so a 512-token prompt goes in one forward and the weights are read
    // once, not twice. Memory does not bound it: the CPU backend's scratch is
    // about 18 floats per hidden unit per row on a Qwen3 shape (72 KiB a row
    // at hidden 1024, 36 MiB for 512 rows), small beside the weights and the
    // KV caches. Latency for the other streams does, and max_rows_per_round
    // is what holds it.
    int32_t prefill_chunk = 512;
    // Grafted lanes: verify a record copy as a second branch beside the own
    // draft. The branch runs on a fork of the stream's KV (copy_prefix), which
    // batch invariance makes exact: the fork's rows get the logits the
    // stream's own rows would. Off in every served configuration (seed: "No
    // served engine turns grafted lanes on yet").
    bool grafted = false;
};

// A grafted branch: rows on a fork of a stream's KV.
struct Graft {
    size_t part = 0;     // index of the branch's rows in Round::parts
    size_t main = 0;     // index of the stream's own rows
    Draft draft;
};

struct Round {
    std::vector<model::Row> rows;        // every stream's rows, concatenated
    std::vector<Stream*> streams;        // per part: its stream (null for a graft's part)
    std::vector<StreamRows> parts;       // per stream: what it put in
    std::vector<model::SamplingParams> samplers;  // per part: its sampling (the rows' sampler index)
    std::vector<int32_t> first_token;    // per part: index of its first sampled token
    std::vector<Graft> grafts;
    std::vector<Stream*> graft_askers;   // streams whose grafted lane asked the record
    int32_t sampled_rows = 0;            // rows so far that sample a token
    bool empty() const { return rows.empty(); }
};

// Appends one stream's rows to a round.
void add_to_round(Round& round, Stream* stream, StreamRows part);

class Lanes {
public:
    Lanes(model::Backend& backend, Drafter& drafter, LanesOptions options);

    void add(std::unique_ptr<Stream> stream) { streams_.push_back(std::move(stream)); }
    // KV stream ids: the engine's streams and the grafts' forks share one space.
    StreamId new_kv() { return next_kv_++; }
    size_t size() const { return streams_.size(); }
    std::vector<std::unique_ptr<Stream>>& streams() { return streams_; }

    Round next_round();
    // tokens: what the forward sampled for the round's rows, in row order.
    std::vector<StreamUpdate> land(const Round& round, std::span<const model::TokenId> tokens);

    // Streams that have ended, removed from the lanes. Their KV is still open.
    std::vector<std::unique_ptr<Stream>> take_finished();

private:
    model::Backend& backend_;
    Drafter& drafter_;
    LanesOptions options_;
    void add_graft(Round& round, Stream& stream, size_t main, Draft graft);
    StreamUpdate land_graft(const Round& round, const Graft& graft, std::span<const model::TokenId> tokens,
                            int32_t* graft_landed);

    std::vector<std::unique_ptr<Stream>> streams_;
    StreamId next_kv_ = 0;
};

}  // namespace tf::engine
