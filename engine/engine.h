// Engine: the synchronous driver of the lane engine. It admits requests
// (up to max_streams at once), resumes prompts from the prompt cache, runs
// rounds over the backend, and hands finished requests' ids to the record.
// The actors run the same rounds (RoundDriver) concurrently; tests, the
// `generate` command and bench-engine use this class directly.
//
// Not thread-safe: one thread calls submit/cancel/step.
#pragma once

#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/drafter.h"
#include "engine/lanes.h"
#include "engine/prompt_cache.h"
#include "engine/text_decoder.h"
#include "model/backend.h"

namespace tf::engine {

struct EngineOptions {
    int32_t max_streams = 16;
    int32_t ctx_size = 0;                  // 0: the model's max_position_embeddings
    int64_t prompt_cache_tokens = 1 << 16; // KV positions kept for later requests
    DrafterOptions drafter;
    LanesOptions lanes;
};

// A finished request, for callers that want the whole reply at once.
struct Completion {
    std::vector<TokenId> tokens;
    std::string text;
    FinishReason finish = FinishReason::running;
    int32_t resume_point = 0;  // prompt tokens the prompt cache already held
    DraftCounters counters;
    std::vector<TokenLogprob> logprobs;  // when the request asked for them
};

class Engine {
public:
    // `record` may be null (Recall off); a read-only or following record is
    // drafted from and never added to (the record enforces its state).
    Engine(model::Backend& backend, CostCurve cost, EngineOptions options, TextDecoderFactory decoders = nullptr,
           recall::Record* record = nullptr);
    ~Engine();

    // Queues a request; it joins the lanes when a stream slot is free.
    // Throws std::invalid_argument for a request that can never run (empty
    // prompt, prompt longer than the context, stop strings without a decoder).
    RequestId submit(GenerationRequest request);
    void cancel(RequestId request);

    // One round. Returns what each stream landed; empty when idle.
    std::vector<StreamUpdate> step();
    bool idle() const { return waiting_.empty() && lanes_.size() == 0; }

    // Submits one request and runs rounds until it ends.
    Completion generate(GenerationRequest request);

    int32_t context_size() const { return ctx_size_; }
    const DraftCounters& totals() const { return totals_; }
    int64_t total_rounds() const { return lanes_.rounds_run(); }
    const PromptCache& prompt_cache() const { return prompt_cache_; }

private:
    void admit();
    void retire(std::unique_ptr<Stream> stream);

    model::Backend& backend_;
    recall::Record* record_;
    EngineOptions options_;
    int32_t ctx_size_;
    TextDecoderFactory decoders_;
    Drafter drafter_;
    Lanes lanes_;
    PromptCache prompt_cache_;
    std::deque<std::pair<RequestId, GenerationRequest>> waiting_;
    RequestId next_request_ = 1;
    DraftCounters totals_;
    std::unordered_map<RequestId, Completion> completions_;  // for generate()
};

}  // namespace tf::engine
