#include "engine/lanes.h"

#include <algorithm>

namespace tf::engine {

Lanes::Lanes(model::Backend& backend, Drafter& drafter, LanesOptions options)
    : backend_(backend), drafter_(drafter), options_(options) {}

Round Lanes::next_round() {
    Round round;
    int32_t logits_rows = 0;
    auto add = [&](Stream& stream, int32_t prefill_budget, Draft draft) {
        const size_t before = round.rows.size();
        stream.add_rows(round.rows, prefill_budget, std::move(draft));
        int32_t wanted = 0;
        for (size_t i = before; i < round.rows.size(); ++i) wanted += round.rows[i].want_logits ? 1 : 0;
        round.streams.push_back(&stream);
        round.first_logits.push_back(logits_rows);
        round.logits_rows.push_back(wanted);
        logits_rows += wanted;
    };
    // Decoding streams first: their rows are few and a reply is waiting on them.
    for (auto& stream : streams_) {
        if (stream->finished() || stream->prefilling()) continue;
        add(*stream, 0, drafter_.next_draft(*stream));
    }
    for (auto& stream : streams_) {
        if (!stream->prefilling()) continue;
        const int32_t budget =
            std::min(options_.prefill_chunk, options_.max_rows_per_round - static_cast<int32_t>(round.rows.size()));
        if (budget <= 0) break;
        add(*stream, budget, Draft{});
    }
    return round;
}

std::vector<StreamUpdate> Lanes::land(const Round& round, const std::vector<float>& logits) {
    const int32_t vocab = backend_.config().vocab_size;
    std::vector<StreamUpdate> updates;
    for (size_t s = 0; s < round.streams.size(); ++s) {
        Stream& stream = *round.streams[s];
        const std::span<const float> rows(logits.data() + static_cast<size_t>(round.first_logits[s]) * vocab,
                                          static_cast<size_t>(round.logits_rows[s]) * vocab);
        StreamUpdate update;
        const int32_t keep = stream.land(rows, vocab, update);
        if (stream.verified_last_round()) drafter_.after_landing(stream);
        // Rejected drafts (and anything past a stop) leave the KV cache.
        if (backend_.stream_length(stream.kv()) > keep) backend_.truncate(stream.kv(), keep);
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
