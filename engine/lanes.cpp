#include "engine/lanes.h"

#include <algorithm>

namespace tf::engine {

Lanes::Lanes(model::Backend& backend, Drafter& drafter, LanesOptions options)
    : backend_(backend), drafter_(drafter), options_(options) {}

void add_to_round(Round& round, Stream* stream, StreamRows part) {
    int32_t logits_rows = 0;
    for (const model::Row& row : round.rows) logits_rows += row.want_logits ? 1 : 0;
    round.first_logits.push_back(logits_rows);
    round.rows.insert(round.rows.end(), part.rows.begin(), part.rows.end());
    round.streams.push_back(stream);
    round.parts.push_back(std::move(part));
}

Round Lanes::next_round() {
    Round round;
    // Decoding streams first: their rows are few and a reply is waiting on them.
    for (auto& stream : streams_) {
        if (stream->finished() || stream->prefilling()) continue;
        add_to_round(round, stream.get(), stream->next_rows(0, drafter_.next_draft(*stream)));
    }
    for (auto& stream : streams_) {
        if (!stream->prefilling()) continue;
        const int32_t budget =
            std::min(options_.prefill_chunk, options_.max_rows_per_round - static_cast<int32_t>(round.rows.size()));
        if (budget <= 0) break;
        add_to_round(round, stream.get(), stream->next_rows(budget, Draft{}));
    }
    return round;
}

std::vector<StreamUpdate> Lanes::land(const Round& round, const std::vector<float>& logits) {
    const int32_t vocab = backend_.config().vocab_size;
    std::vector<StreamUpdate> updates;
    for (size_t s = 0; s < round.streams.size(); ++s) {
        Stream& stream = *round.streams[s];
        const StreamRows& part = round.parts[s];
        const std::span<const float> rows(logits.data() + static_cast<size_t>(round.first_logits[s]) * vocab,
                                          static_cast<size_t>(part.logits_rows()) * vocab);
        const Verdict verdict = judge(part, rows, vocab);
        // Rejected drafts leave the KV cache.
        const int32_t keep = kv_after(part, verdict);
        if (backend_.stream_length(stream.kv()) > keep) backend_.truncate(stream.kv(), keep);
        StreamUpdate update;
        stream.apply(verdict, update);
        if (stream.verified_last_round()) drafter_.after_landing(stream);
        if (!update.tokens.empty() || !update.text.empty() || update.finish != FinishReason::running) {
            updates.push_back(std::move(update));
        }
    }
    return updates;
}

std::vector<std::unique_ptr<Stream>> Lanes::take_finished() {
    std::vector<std::unique_ptr<Stream>> finished;
    for (auto& stream : streams_) {
        if (stream->finished()) finished.push_back(std::move(stream));
    }
    std::erase(streams_, nullptr);
    return finished;
}

}  // namespace tf::engine
