// The backend seam (zeux/calm style): chosen once at start-up, everything
// above it (engine/, actors/) sees only this interface. The CPU backend
// (model/) and the CUDA backend (gpu/) implement it.
//
// Numerics contract (DESIGN.md section 4): the logits a row gets depend only
// on the model, its stream's tokens at positions 0..position and its own
// token; never on the other rows in the batch, their number or order, the
// thread count, or whether the row came from prefill, decode or verify.
// Tests compare them bitwise.
//
// Thread-safety: a Backend is used by one thread at a time (the gpu_lane
// actor); it may use worker threads inside forward().
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/model_config.h"

namespace tf::model {

using StreamId = int32_t;
using TokenId = int32_t;

// One token of one stream in a forward pass.
struct Row {
    StreamId stream = 0;
    int32_t position = 0;      // must equal the stream's KV length once earlier rows of this batch are appended
    TokenId token = 0;
    bool want_logits = false;  // return this row's logits
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

    // One batched forward. Rows of one stream appear in increasing, consecutive
    // positions; each row attends to its stream's positions 0..position
    // (including earlier rows of this batch) and appends its K/V. `logits`
    // receives vocab_size floats per row with want_logits, in row order.
    virtual void forward(std::span<const Row> rows, std::vector<float>& logits) = 0;
};

}  // namespace tf::model
