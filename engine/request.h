// What a request asks the engine for, and how its stream ended. Native
// types only: http/ turns JSON into these.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/constraint.h"
#include "engine/sampler.h"
#include "model/backend.h"

namespace tf::engine {

using model::StreamId;
using model::TokenId;

struct GenerationRequest {
    std::vector<TokenId> prompt;
    SamplingParams sampling;
    int32_t max_tokens = 16;
    std::vector<TokenId> stop_tokens;        // e.g. the model's EOS ids; the reply ends after one
    std::vector<std::string> stop_strings;   // matched on decoded text (needs a tokenizer)
    std::shared_ptr<const Constraint> constraint;  // null: any token may come (constraint.h)
    int32_t logprobs = -1;  // >= 0: each reply token's logprob and this many alternatives (host_sampling.h)
};

enum class FinishReason { running, stop_token, stop_string, length, context_full, cancelled };

const char* to_string(FinishReason reason);

// Throws std::invalid_argument naming the field when `request` can never
// run: an empty prompt, one that fills the context, an id outside the
// vocabulary, max_tokens < 1, or stop strings without a text decoder.
void check_request(const GenerationRequest& request, int32_t vocab_size, int32_t context_size, bool can_decode_text);

// Where a round's draft came from.
enum class DraftSource { none, own_context, record };

// Per-stream counters; the engine sums them for /metrics.
struct DraftCounters {
    int64_t rounds = 0;               // rounds this stream decoded in (prefill excluded)
    int64_t own_drafted = 0;          // own-context draft tokens verified
    int64_t own_landed = 0;
    int64_t copies_offered = 0;       // record copies drafted
    int64_t copy_drafted = 0;         // their tokens
    int64_t copy_landed = 0;

    DraftCounters& operator+=(const DraftCounters& other);
};

}  // namespace tf::engine
