#include "engine/lanes.h"

#include <algorithm>

namespace tf::engine {

Lanes::Lanes(model::Backend& backend, Drafter& drafter, LanesOptions options)
    : backend_(backend), drafter_(drafter), options_(options), driver_(backend, drafter.cost().experts()) {}

std::vector<StreamUpdate> Lanes::run_round() {
    assemble();
    if (driver_.empty()) return {};
    driver_.run();
    return land();
}

void Lanes::assemble() {
    grafts_.clear();
    graft_askers_.clear();
    // Decoding streams first: their rows are few and a reply is waiting on them.
    for (auto& stream : streams_) {
        if (stream->finished() || stream->prefilling()) continue;
        if (!options_.grafted) {
            driver_.add_decoding(*stream, drafter_);
            continue;
        }
        const int32_t room = drafter_.start_round(*stream);
        Draft own = drafter_.own_context_draft(*stream, room);
        bool asked = false;
        Draft graft = drafter_.graft_draft(*stream, room, &asked);
        if (asked) graft_askers_.push_back(stream.get());
        const size_t main = driver_.add(stream->next_rows(0, std::move(own)), stream->kv(), stream.get());
        if (!graft.tokens.empty() && graft.tokens != driver_.part(main).draft) {
            add_graft(*stream, main, std::move(graft));
        }
    }
    for (auto& stream : streams_) {
        if (!stream->prefilling()) continue;
        const int32_t budget = std::min(options_.prefill_chunk, options_.max_rows_per_round - driver_.row_count());
        if (budget <= 0) break;
        driver_.add_prefill(*stream, budget);
    }
}

void Lanes::add_graft(Stream& stream, size_t main, Draft graft) {
    const StreamRows& own = driver_.part(main);
    graft.tokens.resize(std::min<size_t>(graft.tokens.size(), static_cast<size_t>(stream.draft_room())));
    // A branch would need its own masks and logprobs; such streams draft
    // from one source a round.
    if (graft.tokens.empty() || own.host_sampled()) return;
    // The branch runs on a fork of the stream's cache: positions 0..kv_length-1.
    const StreamId fork = new_kv();
    const int32_t base = stream.kv_length();
    backend_.open_stream(fork, stream.capacity());  // the fork may become the stream's cache
    if (base > 0) backend_.copy_prefix(stream.kv(), fork, base);
    StreamRows rows;
    rows.sampling = own.sampling;
    rows.first_position = own.first_position;
    rows.samples = true;
    rows.draft = graft.tokens;
    rows.record_copy = true;
    rows.rows.push_back({fork, base, own.rows.front().token, false, 0});
    for (size_t i = 0; i < graft.tokens.size(); ++i) {
        rows.rows.push_back({fork, base + 1 + static_cast<int32_t>(i), graft.tokens[i], false, 0});
    }
    const size_t part = driver_.add(std::move(rows), fork);
    grafts_.push_back({part, main, std::move(graft)});
}

StreamUpdate Lanes::land_stream(Stream& stream, const Verdict& verdict) {
    Landing landing = land_verdict(stream, verdict);
    // On one thread the record-wide policy learns the outcome at once; the
    // actors send it to the recall writer instead.
    if (landing.copy_verified && drafter_.record()) {
        Drafter::record_outcome(*drafter_.record(), stream.draft(), stream.last_landed_drafts(),
                                stream.last_displaced_landed());
    }
    return std::move(landing.update);
}

StreamUpdate Lanes::land_graft(const Graft& graft, int32_t* graft_landed) {
    Stream& stream = *driver_.stream(graft.main);
    const StreamRows& branch = driver_.part(graft.part);
    const Verdict& own_verdict = driver_.verdicts()[graft.main];
    const Verdict& branch_verdict = driver_.verdicts()[graft.part];
    *graft_landed = branch_verdict.landed_drafts;
    // Both branches sample the same tokens wherever their prefixes agree, so
    // the longer landed run is simply more of the same reply. Own context wins
    // ties. The driver already cut each branch back to what it landed.
    const bool branch_wins = branch_verdict.landed_drafts > own_verdict.landed_drafts;
    backend_.close_stream(branch_wins ? stream.kv() : branch.kv);
    if (branch_wins) {
        // The own branch ran too, so what the copy displaced is known exactly.
        Draft winner = graft.draft;
        winner.displaced = driver_.part(graft.main).draft;
        stream.take_branch(branch, std::move(winner), branch.kv);
    }
    return land_stream(stream, branch_wins ? branch_verdict : own_verdict);
}

std::vector<StreamUpdate> Lanes::land() {
    std::vector<StreamUpdate> updates;
    auto keep_update = [&](StreamUpdate&& update) {
        if (!update.tokens.empty() || !update.text.empty() || update.finish != FinishReason::running) {
            updates.push_back(std::move(update));
        }
    };
    std::vector<bool> settled(driver_.part_count(), false);
    std::vector<std::pair<Stream*, int32_t>> graft_landed;
    for (const Graft& graft : grafts_) {
        int32_t landed = 0;
        keep_update(land_graft(graft, &landed));
        settled[graft.main] = settled[graft.part] = true;
        graft_landed.emplace_back(driver_.stream(graft.main), landed);
    }
    for (Stream* asker : graft_askers_) {
        int32_t landed = 0;
        for (const auto& [stream, n] : graft_landed) {
            if (stream == asker) landed = n;
        }
        asker->offer_state().record_graft_outcome(static_cast<uint32_t>(landed));
    }
    for (size_t part = 0; part < driver_.part_count(); ++part) {
        if (settled[part]) continue;
        keep_update(land_stream(*driver_.stream(part), driver_.verdicts()[part]));
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
