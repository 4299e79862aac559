// Lanes: the streams Engine is decoding, and which of them take part in
// each round. A round is one batched forward over the rows of every ready
// stream (continuous batching: streams join and leave between rounds);
// RoundDriver assembles, runs and judges it, the same code the gpu_lane
// actor uses. The engine loop reads
//
//     std::vector<StreamUpdate> updates = lanes.run_round();
//
// What Lanes adds is policy: decoding streams first and prompt chunks after
// them up to max_rows_per_round, the record asked synchronously, and the
// optional grafted branches. Not thread-safe (one engine thread).
#pragma once

#include <memory>
#include <vector>

#include "engine/drafter.h"
#include "engine/round_driver.h"
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
    size_t part = 0;     // the branch's part in the round (RoundDriver::part)
    size_t main = 0;     // the stream's own part
    Draft draft;
};

class Lanes {
public:
    Lanes(model::Backend& backend, Drafter& drafter, LanesOptions options);

    void add(std::unique_ptr<Stream> stream) { streams_.push_back(std::move(stream)); }
    // KV stream ids: the engine's streams and the grafts' forks share one space.
    StreamId new_kv() { return next_kv_++; }
    size_t size() const { return streams_.size(); }
    std::vector<std::unique_ptr<Stream>>& streams() { return streams_; }

    // One round over every stream that can take part: what each landed.
    // Empty, and no forward run, when no stream is ready.
    std::vector<StreamUpdate> run_round();
    int64_t rounds_run() const { return driver_.rounds_run(); }

    // Streams that have ended, removed from the lanes. Their KV is still open.
    std::vector<std::unique_ptr<Stream>> take_finished();

private:
    void assemble();
    void add_graft(Stream& stream, size_t main, Draft graft);
    std::vector<StreamUpdate> land();
    StreamUpdate land_graft(const Graft& graft, int32_t* graft_landed);
    StreamUpdate land_stream(Stream& stream, const Verdict& verdict);

    model::Backend& backend_;
    Drafter& drafter_;
    LanesOptions options_;
    RoundDriver driver_;
    std::vector<Graft> grafts_;           // this round's
    std::vector<Stream*> graft_askers_;   // streams whose grafted lane asked the record this round
    std::vector<std::unique_ptr<Stream>> streams_;
    StreamId next_kv_ = 0;
};

}  // namespace tf::engine
