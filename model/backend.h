// The backend seam (zeux/calm style): chosen once at start-up, everything
// above it (engine/, actors/) sees only this interface. The CPU backend
// (model/) and the CUDA backend (gpu/) implement it.
//
// Numerics contract (docs/design.md, section 4): the logits a row gets
// depend only on the model, its stream's tokens at positions 0..position and
// its own token; never on the other rows in the batch, their number or
// order, the thread count, or whether the row came from prefill, decode or
// verify. Tests compare them bitwise. A row's sampled token is a pure
// function of those logits, its sampler and its position (model/sampling.h),
// so it inherits the same invariance.
//
// Rows come back as tokens: the backend samples every row that asks where
// its logits are, and only rows that ask for logits (logprobs, tests) copy
// vocab_size floats back. On a GPU that is a few bytes a row instead of
// megabytes a round.
//
// Thread-safety: a Backend is used by one thread at a time (the gpu_lane
// actor); it may use worker threads inside forward().
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/model_config.h"
#include "model/sampling.h"

namespace tf::model {

using StreamId = int32_t;
using TokenId = int32_t;

// One token of one stream in a forward pass.
struct Row {
    StreamId stream = 0;
    int32_t position = 0;      // must equal the stream's KV length once earlier rows of this batch are appended
    TokenId token = 0;
    bool want_logits = false;  // return this row's logits
    // >= 0: sample the token at position + 1 from this row's logits with
    // samplers[sampler] of the forward call. -1: no token.
    int32_t sampler = -1;
};

// What one forward returns.
struct RowOutputs {
    std::vector<TokenId> tokens;  // one per row with sampler >= 0, in row order
    std::vector<float> logits;    // vocab_size floats per row with want_logits, in row order
};

class Backend {
public:
    virtual ~Backend() = default;

    virtual const ModelConfig& config() const = 0;

    // KV caches, one per stream id. `capacity` is the most tokens the stream
    // will hold (prompt + reply); open_stream on an open id is an error.
    virtual void open_stream(StreamId stream, int32_t capacity) = 0;
    virtual void close_stream(StreamId stream) = 0;
    virtual int32_t stream_length(StreamId stream) const = 0;

    // Drops positions >= length: rejected drafts leave the cache.
    virtual void truncate(StreamId stream, int32_t length) = 0;

    // Makes `to` (open, any length) hold a copy of the first `length`
    // positions of `from`: the prompt cache resumes from it.
    virtual void copy_prefix(StreamId from, StreamId to, int32_t length) = 0;

    // The same result in `to`, where `from` is of no further use to the
    // caller: a backend that can hand `from`'s storage over instead of
    // copying it does so and returns true, and `from` is then empty (close
    // it). Otherwise it copies and returns false, `from` unchanged. Resuming
    // a long conversation this way neither copies its KV nor touches fresh
    // memory for it.
    virtual bool move_prefix(StreamId from, StreamId to, int32_t length) {
        copy_prefix(from, to, length);
        return false;
    }

    // Recurrent layers (config().recurrent(): NemotronH's Mamba2 mixers)
    // fold every position into one state per stream, so truncate and
    // copy_prefix only reach lengths where the backend still holds that
    // state: any length of the stream's last forward, and one length kept
    // on request. Attention-only models hold every length up to the stream's.
    virtual bool holds_state_at(StreamId stream, int32_t length) const {
        return length >= 0 && length <= stream_length(stream);
    }
    // Asks to keep the state at `length` when a forward passes it (the
    // prompt cache resumes a regenerated prompt there); replaces an earlier
    // request. Nothing to do without recurrent layers.
    virtual void keep_state_at(StreamId /*stream*/, int32_t /*length*/) {}

    // One batched forward. Rows of one stream appear in increasing, consecutive
    // positions; each row attends to its stream's positions 0..position
    // (including earlier rows of this batch) and appends its K/V. A row's
    // sampler indexes `samplers`; out of range is an error.
    virtual void forward(std::span<const Row> rows, std::span<const SamplingParams> samplers, RowOutputs& out) = 0;

    // A mixture of experts: the distinct experts the last forward read, on
    // average over its expert layers (k = experts_per_token for one row, at
    // most num_experts). What a round costs grows with it, so the copy
    // window is priced by it (engine/expert_costs.h). 0: a dense model, or
    // a backend that does not count.
    virtual double experts_touched() const { return 0.0; }

    // The same with no sampling: `logits` receives vocab_size floats per row
    // with want_logits, in row order. Tests and benchmarks read logits so.
    void forward(std::span<const Row> rows, std::vector<float>& logits) {
        RowOutputs out;
        out.logits = std::move(logits);
        forward(rows, {}, out);
        logits = std::move(out.logits);
    }
};

}  // namespace tf::model
