#include "http/metrics_page.h"

#include <array>

namespace tf::http {

namespace {

// Seconds; a tiny CPU model answers in milliseconds, a large one in tens of seconds.
std::vector<double> latency_bounds() {
    return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
}

// Seconds per token; tinycode on two CPU threads writes one in about 1.5 ms,
// a copy that lands costs a fraction of that per token.
std::vector<double> token_gap_bounds() {
    return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
}

constexpr std::array kStates = {recall::RecallState::off,       recall::RecallState::writing,
                                recall::RecallState::read_only, recall::RecallState::following,
                                recall::RecallState::paused_disk, recall::RecallState::paused_delete};

double d(uint64_t value) { return static_cast<double>(value); }
double d(int64_t value) { return static_cast<double>(value); }

}  // namespace

RequestTimings::RequestTimings()
    : histograms_{Histogram(latency_bounds()), Histogram(latency_bounds()), Histogram(token_gap_bounds())} {}

void RequestTimings::observe_first_token(std::chrono::duration<double> since_arrival) {
    std::lock_guard lock(mutex_);
    histograms_.time_to_first_token.observe(since_arrival.count());
}

void RequestTimings::observe_finished(std::chrono::duration<double> since_arrival) {
    std::lock_guard lock(mutex_);
    histograms_.request_latency.observe(since_arrival.count());
}

void RequestTimings::observe_token_gap(std::chrono::duration<double> since_previous, size_t tokens) {
    if (tokens == 0) return;
    const double share = since_previous.count() / static_cast<double>(tokens);
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < tokens; ++i) histograms_.inter_token_latency.observe(share);
}

RequestTimings::Snapshot RequestTimings::snapshot() const {
    std::lock_guard lock(mutex_);
    return histograms_;
}

std::string render_metrics(const actors::ServiceMetrics& service, const actors::RecallReport& recall,
                           const RequestTimings::Snapshot& timings, const ServedFacts& facts) {
    MetricsText m;
    if (!facts.kv_type.empty()) {
        m.gauge("tensorfold_kv_cache_info", "The KV cache's element type (--kv-type), as a label; always 1.", 1,
                {{"type", facts.kv_type}});
        m.gauge("tensorfold_kv_cache_bytes_per_token", "Bytes of KV cache one token of a stream takes.",
                d(facts.kv_bytes_per_token));
    }
    const recall::RecordStats& s = recall.stats;
    const recall::RecallState current = recall.enabled ? s.state : recall::RecallState::off;
    for (recall::RecallState state : kStates) {
        m.gauge("tensorfold_recall_state", "The record's state: 1 for the current state, 0 for the others.",
                state == current ? 1 : 0, {{"state", recall::to_string(state)}});
    }
    m.gauge("tensorfold_recall_capacity_bytes", "The record's disk limit (--recall-gib) in bytes.", d(s.capacity_bytes));
    m.gauge("tensorfold_recall_disk_bytes", "Bytes of the record's chunk files on disk.", d(s.disk_bytes));
    m.gauge("tensorfold_recall_memory_bytes", "Bytes the record takes in memory (chunks and key table).",
            d(s.memory_bytes));
    m.gauge("tensorfold_recall_chunks", "Chunk files in the record.", d(s.chunks));
    m.gauge("tensorfold_recall_ids", "Ids stored in the record, separators included.", d(s.ids));
    // The record's landing counters restart at 0 after DELETE /v1/recall
    // (seed: "empties the record in memory, with its landing rates and
    // counters"); Prometheus reads that as a counter reset.
    for (size_t b = 0; b < recall::kMatchBuckets; ++b) {
        const recall::BucketLanding& bucket = s.landing.buckets[b];
        const Labels match = {{"match", recall::to_string(static_cast<recall::MatchBucket>(b))}};
        m.counter("tensorfold_recall_copies_offered_total",
                  "Copies the record offered, by match length (16-31, 32-63, 64+ tokens); reset by DELETE /v1/recall.",
                  d(bucket.copies_offered), match);
    }
    for (size_t b = 0; b < recall::kMatchBuckets; ++b) {
        const recall::BucketLanding& bucket = s.landing.buckets[b];
        const Labels match = {{"match", recall::to_string(static_cast<recall::MatchBucket>(b))}};
        m.counter("tensorfold_recall_copy_tokens_drafted_total",
                  "Tokens of the record's copies verified, by match length; reset by DELETE /v1/recall.",
                  d(bucket.tokens_drafted), match);
    }
    for (size_t b = 0; b < recall::kMatchBuckets; ++b) {
        const recall::BucketLanding& bucket = s.landing.buckets[b];
        const Labels match = {{"match", recall::to_string(static_cast<recall::MatchBucket>(b))}};
        m.counter("tensorfold_recall_copy_tokens_landed_total",
                  "Tokens of the record's copies that landed, by match length; reset by DELETE /v1/recall.",
                  d(bucket.tokens_landed), match);
    }
    // The same copies split by how the stream's earlier copies in its reply
    // landed (recall/policy.h, CopyHistory), with the per-token landing
    // probability that sizes the next copy's window.
    auto each_history = [&](auto&& emit) {
        for (size_t b = 0; b < recall::kMatchBuckets; ++b) {
            for (size_t h = 0; h < recall::kCopyHistories; ++h) {
                const Labels labels = {{"match", recall::to_string(static_cast<recall::MatchBucket>(b))},
                                       {"history", recall::to_string(static_cast<recall::CopyHistory>(h))}};
                emit(s.landing.by_history[b][h], labels);
            }
        }
    };
    each_history([&](const recall::BucketLanding& cell, const Labels& labels) {
        m.counter("tensorfold_recall_history_copies_offered_total",
                  "Copies the record offered, by match length and by how the stream's previous copy in its reply "
                  "landed (first, after_whole, after_short); reset by DELETE /v1/recall.",
                  d(cell.copies_offered), labels);
    });
    each_history([&](const recall::BucketLanding& cell, const Labels& labels) {
        m.counter("tensorfold_recall_history_copy_tokens_landed_total",
                  "Tokens of those copies that landed, by match length and history; reset by DELETE /v1/recall.",
                  d(cell.tokens_landed), labels);
    });
    each_history([&](const recall::BucketLanding& cell, const Labels& labels) {
        m.gauge("tensorfold_recall_copy_landing_probability",
                "Per-token landing probability the next copy's window is sized by, by match length and history.",
                cell.landing_probability, labels);
    });
    m.counter("tensorfold_recall_own_tokens_displaced_total",
              "Own-context draft tokens that would have landed in the rounds record copies took: what the copies "
              "cost; reset by DELETE /v1/recall.",
              d(s.landing.own_tokens_displaced));
    m.counter("tensorfold_recall_copies_same_as_own_total",
              "Record matches left unused because the stream's own context drafts the same tokens; reset by "
              "DELETE /v1/recall.",
              d(s.landing.copies_same_as_own));
    m.counter("tensorfold_own_draft_tokens_drafted_total", "Draft tokens from the stream's own context verified.",
              d(service.drafts.own_drafted));
    m.counter("tensorfold_own_draft_tokens_landed_total", "Draft tokens from the stream's own context that landed.",
              d(service.drafts.own_landed));
    m.counter("tensorfold_prompt_tokens_total", "Prompt tokens of finished requests.", d(service.prompt_tokens_total));
    m.counter("tensorfold_prompt_tokens_computed_total",
              "Prompt tokens of finished requests run through the model (past the prompt cache's resume point).",
              d(service.prompt_tokens_computed));
    m.counter("tensorfold_generation_tokens_total", "Tokens generated.", d(service.generation_tokens_total));
    m.counter("tensorfold_requests_total", "Generation requests submitted.", d(service.requests_total));
    m.gauge("tensorfold_requests_running", "Requests decoding now.", d(service.requests_running));
    m.gauge("tensorfold_requests_waiting", "Requests queued for a stream slot.", d(service.requests_waiting));
    m.counter("tensorfold_rounds_total", "Engine rounds run (one batched forward each).", d(service.rounds_total));
    m.counter("tensorfold_lone_stream_rounds_total",
              "Rounds of a stream alone on the lane, run back to back by the lane itself (included in rounds_total).",
              d(service.lone_rounds_total));
    m.histogram("tensorfold_time_to_first_token_seconds",
                "Seconds from a request's arrival to its first generated token.", timings.time_to_first_token);
    m.histogram("tensorfold_request_latency_seconds", "Seconds from a request's arrival to its last token.",
                timings.request_latency);
    m.histogram("tensorfold_inter_token_latency_seconds",
                "Seconds between a stream's token events after its first token, shared equally by the tokens "
                "an event brings.",
                timings.inter_token_latency);
    return m.text();
}

}  // namespace tf::http
