#include "engine/lanes.h"

#include <algorithm>

namespace tf::engine {

Lanes::Lanes(model::Backend& backend, Drafter& drafter, LanesOptions options)
    : backend_(backend), drafter_(drafter), options_(options) {}

void add_to_round(Round& round, Stream* stream, StreamRows part) {
    use_sampler(part, static_cast<int32_t>(round.samplers.size()));
    round.samplers.push_back(part.sampling);
    round.first_token.push_back(round.sampled_rows);
    round.sampled_rows += part.sampled_rows();
    round.rows.insert(round.rows.end(), part.rows.begin(), part.rows.end());
    round.streams.push_back(stream);
    round.parts.push_back(std::move(part));
}

Round Lanes::next_round() {
    Round round;
    // Decoding streams first: their rows are few and a reply is waiting on them.
    for (auto& stream : streams_) {
        if (stream->finished() || stream->prefilling()) continue;
        if (!options_.grafted) {
            add_to_round(round, stream.get(), stream->next_rows(0, drafter_.next_draft(*stream)));
            continue;
        }
        const int32_t room = drafter_.start_round(*stream);
        Draft own = drafter_.own_context_draft(*stream, room);
        bool asked = false;
        Draft graft = drafter_.graft_draft(*stream, room, &asked);
        if (asked) round.graft_askers.push_back(stream.get());
        const size_t main = round.parts.size();
        add_to_round(round, stream.get(), stream->next_rows(0, std::move(own)));
        if (!graft.tokens.empty() && graft.tokens != round.parts[main].draft) add_graft(round, *stream, main, std::move(graft));
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

void Lanes::add_graft(Round& round, Stream& stream, size_t main, Draft graft) {
    const StreamRows& own = round.parts[main];
    graft.tokens.resize(std::min<size_t>(graft.tokens.size(), static_cast<size_t>(stream.draft_room())));
    if (graft.tokens.empty()) return;
    // The branch runs on a fork of the stream's cache: positions 0..kv_length-1.
    const StreamId fork = new_kv();
    const int32_t base = stream.kv_length();
    backend_.open_stream(fork, stream.capacity());  // the fork may become the stream's cache
    if (base > 0) backend_.copy_prefix(stream.kv(), fork, base);
    StreamRows rows;
    rows.kv = fork;
    rows.sampling = own.sampling;
    rows.first_position = own.first_position;
    rows.samples = true;
    rows.draft = graft.tokens;
    rows.rows.push_back({fork, base, own.rows.front().token, false, 0});
    for (size_t i = 0; i < graft.tokens.size(); ++i) {
        rows.rows.push_back({fork, base + 1 + static_cast<int32_t>(i), graft.tokens[i], false, 0});
    }
    round.grafts.push_back({round.parts.size(), main, std::move(graft)});
    add_to_round(round, nullptr, std::move(rows));
}

StreamUpdate Lanes::land_graft(const Round& round, const Graft& graft, std::span<const model::TokenId> tokens,
                               int32_t* graft_landed) {
    auto tokens_of = [&](size_t part) {
        return tokens.subspan(static_cast<size_t>(round.first_token[part]),
                              static_cast<size_t>(round.parts[part].sampled_rows()));
    };
    Stream& stream = *round.streams[graft.main];
    const StreamRows& own = round.parts[graft.main];
    const StreamRows& branch = round.parts[graft.part];
    const Verdict own_verdict = judge(own, tokens_of(graft.main));
    const Verdict branch_verdict = judge(branch, tokens_of(graft.part));
    *graft_landed = branch_verdict.landed_drafts;
    // Both branches sample the same tokens wherever their prefixes agree, so
    // the longer landed run is simply more of the same reply. Own context wins ties.
    const bool branch_wins = branch_verdict.landed_drafts > own_verdict.landed_drafts;
    const StreamId loser = branch_wins ? stream.kv() : branch.kv;
    const Verdict& verdict = branch_wins ? branch_verdict : own_verdict;
    const StreamRows& winner = branch_wins ? branch : own;
    const int32_t keep = kv_after(winner, verdict);
    if (backend_.stream_length(winner.kv) > keep) backend_.truncate(winner.kv, keep);
    backend_.close_stream(loser);
    if (branch_wins) stream.take_branch(branch, graft.draft, branch.kv);
    StreamUpdate update;
    stream.apply(verdict, update);
    if (stream.verified_last_round()) drafter_.after_landing(stream);
    return update;
}

std::vector<StreamUpdate> Lanes::land(const Round& round, std::span<const model::TokenId> tokens) {
    std::vector<StreamUpdate> updates;
    auto keep_update = [&](StreamUpdate&& update) {
        if (!update.tokens.empty() || !update.text.empty() || update.finish != FinishReason::running) {
            updates.push_back(std::move(update));
        }
    };
    std::vector<bool> settled(round.parts.size(), false);
    std::vector<std::pair<Stream*, int32_t>> graft_landed;
    for (const Graft& graft : round.grafts) {
        int32_t landed = 0;
        keep_update(land_graft(round, graft, tokens, &landed));
        settled[graft.main] = settled[graft.part] = true;
        graft_landed.emplace_back(round.streams[graft.main], landed);
    }
    for (Stream* asker : round.graft_askers) {
        int32_t landed = 0;
        for (const auto& [stream, n] : graft_landed) {
            if (stream == asker) landed = n;
        }
        asker->offer_state().record_graft_outcome(static_cast<uint32_t>(landed));
    }
    for (size_t s = 0; s < round.parts.size(); ++s) {
        if (settled[s]) continue;
        Stream& stream = *round.streams[s];
        const StreamRows& part = round.parts[s];
        const Verdict verdict = judge(part, tokens.subspan(static_cast<size_t>(round.first_token[s]),
                                                            static_cast<size_t>(part.sampled_rows())));
        // Rejected drafts leave the KV cache.
        const int32_t keep = kv_after(part, verdict);
        if (backend_.stream_length(stream.kv()) > keep) backend_.truncate(stream.kv(), keep);
        StreamUpdate update;
        stream.apply(verdict, update);
        if (stream.verified_last_round()) drafter_.after_landing(stream);
        keep_update(std::move(update));
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
