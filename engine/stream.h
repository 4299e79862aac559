// Stream: one request's decoding state inside the engine: its tokens, its
// place in the KV cache, its draft, and how its reply ends. Pure logic: it
// produces rows and consumes the tokens they sampled; RoundDriver does the backend calls.
//
// Positions: the prompt and reply form one sequence; the KV cache holds
// positions 0..kv_length-1. While decoding, the last sampled token (the
// `pending` one) is not yet in the KV cache: next round runs it, followed
// by the draft.
//
// Not thread-safe (driven by one thread).
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/constraint.h"
#include "engine/context_index.h"
#include "engine/draft_window.h"
#include "engine/request.h"
#include "engine/stop_strings.h"
#include "engine/text_decoder.h"
#include "engine/verify.h"
#include "recall/policy.h"

namespace tf::engine {

using RequestId = uint64_t;

struct Draft {
    DraftSource source = DraftSource::none;
    int32_t match_length = 0;  // tokens of the context the source matched
    std::vector<TokenId> tokens;
    // A record copy: the stream's copy history it was judged by, and the
    // own-context draft it took the place of (what the copy costs if it misses).
    recall::CopyHistory history = recall::CopyHistory::first;
    std::vector<TokenId> displaced;
};

// What one round did for a stream, for the caller to pass on.
struct StreamUpdate {
    RequestId request = 0;
    std::vector<TokenId> tokens;  // landed this round, in order
    std::string text;             // their text (when the engine has a decoder), stop strings held back
    FinishReason finish = FinishReason::running;
    std::vector<TokenLogprob> logprobs;  // one per token when the request asked for logprobs
};

class Stream {
public:
    Stream(RequestId request, StreamId kv, GenerationRequest spec, int32_t resume_point, int32_t capacity,
           std::unique_ptr<TextDecoder> decoder);

    RequestId request() const { return request_; }
    StreamId kv() const { return kv_; }
    const GenerationRequest& spec() const { return spec_; }
    int32_t resume_point() const { return resume_point_; }
    int32_t kv_length() const { return kv_length_; }
    int32_t capacity() const { return capacity_; }
    int32_t prompt_length() const { return static_cast<int32_t>(spec_.prompt.size()); }
    bool prefilling() const { return kv_length_ < prompt_length() && !finished(); }
    bool finished() const { return finish_ != FinishReason::running; }
    FinishReason finish_reason() const { return finish_; }
    const std::vector<TokenId>& reply() const { return reply_; }
    const ContextIndex& context() const { return context_; }
    const DraftCounters& counters() const { return counters_; }
    LandingRate& own_rate() { return own_rate_; }
    recall::StreamOfferState& offer_state() { return offer_state_; }
    const recall::StreamOfferState& offer_state() const { return offer_state_; }

    // The most draft tokens this stream can use now: room in its KV cache
    // and in its max_tokens.
    int32_t draft_room() const;

    // This round's rows: up to `prefill_budget` prompt rows while
    // prefilling, else the pending token and `draft`.
    StreamRows next_rows(int32_t prefill_budget, Draft draft);

    // Takes the verdict on the rows next_rows() gave (verify.h): lands its
    // tokens, checks the stops, and keeps the KV length the lane kept.
    void apply(const Verdict& verdict, StreamUpdate& update);

    // What this request adds to the record when it ends: its prompt from the
    // prompt cache's resume point on, then its reply (docs/recall.md, "On disk",
    // what gets added). As one
    // run, so a later request ending like this prompt finds this reply after
    // it. A stream that ended before reading its whole prompt adds what it read.
    std::vector<uint32_t> record_ids() const;

    // The KV positions worth keeping once the stream has ended: its context
    // up to what the cache holds.
    int32_t kept_length() const { return std::min(kv_length_, context_.size()); }

    void cancel() { finish_ = FinishReason::cancelled; }

    // Grafted lanes: the round's winning branch ran on another KV stream
    // (a fork of this one). The stream takes that branch's rows, draft and
    // cache before apply().
    void take_branch(StreamRows rows, Draft draft, StreamId kv);

    // The draft of the round in flight (for statistics after landing).
    const Draft& draft() const { return draft_; }
    int32_t last_landed_drafts() const { return last_landed_drafts_; }
    // A record copy's round: how many tokens of the own-context draft it
    // displaced would have landed (a lower bound when that draft was
    // longer than what the round confirmed).
    int32_t last_displaced_landed() const { return last_displaced_landed_; }
    // The rest of the last round this stream took part in: the other
    // streams' decode rows (RoundDriver). The next
    // round is expected to look alike; a copy's window is priced by it.
    SharedRound others_last_round() const { return others_last_round_; }
    // True when the round just landed verified a decode row (not prefill).
    bool verified_last_round() const { return verified_last_round_; }

private:
    // Takes a landed token; false once the reply has ended.
    bool accept(TokenId token, StreamUpdate& update);
    // A constrained stream's masks for rows that sample after the reply so
    // far and then each token of `draft`; cuts `draft` at the first token
    // the constraint forbids (it could never land).
    void add_masks(StreamRows& rows, std::vector<TokenId>& draft) const;

    RequestId request_;
    StreamId kv_;
    GenerationRequest spec_;
    int32_t resume_point_;
    int32_t capacity_;
    int32_t kv_length_;
    StreamRows in_flight_;  // the rows of the round not yet applied
    TokenId pending_ = -1;
    Draft draft_;
    int32_t last_landed_drafts_ = 0;
    int32_t last_displaced_landed_ = 0;
    SharedRound others_last_round_;
    std::vector<TokenId> reply_;
    ContextIndex context_;
    LandingRate own_rate_;
    recall::StreamOfferState offer_state_;
    bool verified_last_round_ = false;
    DraftCounters counters_;
    std::unique_ptr<TextDecoder> decoder_;
    std::unique_ptr<ConstraintState> constraint_;  // where the reply is in its constraint; null: none
    StopStringMatcher stops_;
    FinishReason finish_ = FinishReason::running;
};

}  // namespace tf::engine
