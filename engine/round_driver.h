// RoundDriver: the single place where a round is put together, run and
// judged. Every way of serving goes through it: Engine's Lanes (`generate`,
// `bench-engine`, most engine tests), and the gpu_lane actor (`serve`), both
// for rounds shared by several stream actors and for a lone stream lent to
// the lane. One copy of this code means a benchmark of one path measures the
// others, and an identity test of one covers them all.
//
//     driver.add_decoding(stream, drafter);         // or add_prefill / add
//     const auto& verdicts = driver.run();          // forward, judge, truncate
//     Landing landing = land_verdict(stream, verdicts[0]);
//
// Which streams take part, and in what order, is the caller's policy (Lanes
// puts decoding streams first; the lane orders by handle): batch invariance
// makes the tokens independent of it.
//
// Not thread-safe: one driver per backend, used by the thread or actor that
// owns that backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/drafter.h"
#include "engine/stream.h"
#include "engine/verify.h"
#include "model/backend.h"

namespace tf::engine {

class RoundDriver {
public:
    // `experts` (a mixture's; CostCurve::experts()) learns from each decode
    // round what its rows read; null for a dense model.
    explicit RoundDriver(model::Backend& backend, std::shared_ptr<ExpertCosts> experts = nullptr)
        : backend_(backend), experts_(std::move(experts)) {}

    // Adds one stream's rows, run on KV stream `kv`: a stream actor numbers
    // its rows as its own cache 0, and only the lane knows the real id.
    // `stream` is the engine::Stream behind the rows when the caller holds it
    // (null for rows that came in a message). Returns the part's index.
    // The first add after run() starts a new round.
    size_t add(StreamRows part, StreamId kv, Stream* stream = nullptr);

    // A decoding stream's part: its pending token then this round's draft
    // (own context, or a record copy when the offer policy prefers one;
    // Drafter::next_draft). A stream with no room gets no draft.
    size_t add_decoding(Stream& stream, const Drafter& drafter, StreamId kv);
    size_t add_decoding(Stream& stream, const Drafter& drafter) { return add_decoding(stream, drafter, stream.kv()); }

    // A prefilling stream's next prompt chunk, at most `budget` rows.
    size_t add_prefill(Stream& stream, int32_t budget, StreamId kv);
    size_t add_prefill(Stream& stream, int32_t budget) { return add_prefill(stream, budget, stream.kv()); }

    // One forward over every part's rows, then a verdict per part (in the
    // order they were added). A round without prefill rows tells `experts`
    // how many experts its rows read. Rejected drafts are truncated from the KV
    // caches before it returns, so a verdict's tokens are exactly what the
    // cache holds. The round (parts, verdicts) stays readable until the next add.
    const std::vector<Verdict>& run();

    bool empty() const { return ran_ || rows_.empty(); }
    int32_t row_count() const { return ran_ ? 0 : static_cast<int32_t>(rows_.size()); }
    size_t part_count() const { return parts_.size(); }
    const StreamRows& part(size_t index) const { return parts_[index]; }
    Stream* stream(size_t index) const { return streams_[index]; }
    const std::vector<Verdict>& verdicts() const { return verdicts_; }

    // Forwards run since the driver was made (the rounds of /metrics).
    int64_t rounds_run() const { return rounds_run_; }

private:
    void start_if_ran();

    model::Backend& backend_;
    std::shared_ptr<ExpertCosts> experts_;
    // The current round. Vectors are cleared, not freed, between rounds:
    // a decoding lane runs thousands of rounds of the same shape.
    std::vector<model::Row> rows_;
    std::vector<model::SamplingParams> samplers_;  // one per part: row.sampler indexes it
    std::vector<StreamRows> parts_;
    std::vector<Stream*> streams_;      // per part, null when the caller has no Stream
    std::vector<int32_t> first_token_;  // per part: where its device-sampled tokens start
    std::vector<int32_t> first_logits_;  // per part: its first row of returned logits (host-sampled parts)
    int32_t sampled_rows_ = 0;
    int32_t logit_rows_ = 0;
    model::RowOutputs outputs_;
    std::vector<TokenId> host_tokens_;  // a host-sampled part's tokens
    std::vector<float> masked_;         // scratch for a masked row's logits
    std::vector<Verdict> verdicts_;
    bool ran_ = false;
    int64_t rounds_run_ = 0;
};

// What landing a verdict did to a stream. The stream's own offer state has
// already taken the outcome; a record copy's outcome also belongs to the
// record-wide policy, which the caller reaches directly (Engine) or through
// the recall writer (actors).
struct Landing {
    StreamUpdate update;
    bool copy_verified = false;  // the round verified a record copy: report stream.draft() and its landed count
};

// Lands a verdict on the stream that produced the rows: tokens, stops,
// statistics. Used wherever the stream lives (Lanes, the stream actor, the
// lane's lone-stream rounds), so all of them land alike.
Landing land_verdict(Stream& stream, const Verdict& verdict);

}  // namespace tf::engine
