#include "engine/drafter.h"

#include <algorithm>

namespace tf::engine {

namespace {

// A record copy of `match`, as long as it pays in the round it joins, under
// the landing probability of its match length and the stream's copy history.
Draft copy_of(recall::Record& record, const CostCurve& cost, const recall::Match& match, const CopyQuery& query) {
    const double p = record.offers().landing_probability(match.length, query.history);
    const auto available = static_cast<int32_t>(match.continuation.size());
    const int32_t window = std::max(1, best_shared_window(cost, p, available, query.others, query.max_slowdown));
    Draft draft;
    draft.source = DraftSource::record;
    draft.match_length = static_cast<int32_t>(match.length);
    draft.history = query.history;
    draft.tokens.assign(match.continuation.begin(), match.continuation.begin() + window);
    return draft;
}

// The own context already drafts everything the record would copy.
bool same_as_own(std::span<const TokenId> own, std::span<const uint32_t> continuation) {
    if (own.empty() || own.size() < continuation.size()) return false;
    return std::equal(continuation.begin(), continuation.end(), own.begin(),
                      [](uint32_t a, TokenId b) { return a == static_cast<uint32_t>(b); });
}

}  // namespace

int32_t Drafter::start_round(Stream& stream) const {
    stream.offer_state().start_round();
    return std::min(options_.max_draft, stream.draft_room());
}

Draft Drafter::next_draft(Stream& stream) const {
    const int32_t room = start_round(stream);
    if (room <= 0) return {};
    // Own context first; the record only when the policy expects its copy to
    // land more than the stream's own drafts have lately (ties: own context).
    Draft own = own_context_draft(stream, room);
    if (!may_ask_record(stream)) return own;
    return choose(std::move(own), record_draft(*record_, cost_, copy_query(stream, room)));
}

Draft Drafter::choose(Draft own, Draft copy) {
    // The record agreed with the own context: the longer of the two runs.
    if (copy.source == DraftSource::own_context) return copy.tokens.size() > own.tokens.size() ? copy : own;
    if (copy.source != DraftSource::record) return own;
    copy.displaced = std::move(own.tokens);
    return copy;
}

Draft Drafter::own_context_draft(Stream& stream, int32_t room) const {
    Draft draft;
    room = std::min(room, options_.own_context_tokens);
    if (!options_.own_context || room <= 0) return draft;
    const ContextMatch match = stream.context().longest_match();
    if (match.length == 0) return draft;
    const int32_t window = best_window(cost_, stream.own_rate().probability(), room);
    if (window == 0) return draft;
    draft.source = DraftSource::own_context;
    draft.match_length = match.length;
    draft.tokens = stream.context().continuation(match, window);
    return draft;
}

std::vector<uint32_t> Drafter::lookup_tail(const Stream& stream) {
    const std::vector<TokenId>& tokens = stream.context().tokens();
    const size_t tail = std::min<size_t>(tokens.size(), kLookupTail);
    return std::vector<uint32_t>(tokens.end() - static_cast<std::ptrdiff_t>(tail), tokens.end());
}

CopyQuery Drafter::copy_query(const Stream& stream, int32_t room) const {
    CopyQuery query;
    query.tail = lookup_tail(stream);
    query.room = room;
    query.own_expected = stream.offer_state().own_expected_landed();
    query.history = stream.offer_state().copy_history();
    query.others = stream.others_last_round();
    query.max_slowdown = options_.copy_max_slowdown;
    const int32_t own_room = std::min(room, options_.own_context_tokens);
    if (options_.own_context && own_room > 0) {
        const ContextMatch match = stream.context().longest_match();
        if (match.length > 0) query.own_continuation = stream.context().continuation(match, own_room);
    }
    return query;
}

Draft Drafter::record_draft(recall::Record& record, const CostCurve& cost, const CopyQuery& query) {
    Draft draft;
    if (query.room <= 0) return draft;
    recall::Match match = record.lookup(query.tail, static_cast<uint32_t>(query.room));
    if (match.length < recall::Index::kKeyIds || match.continuation.empty()) return draft;
    // Checked before the policy is asked: such a match is no ask at all. The
    // own context drafts these tokens, but the record's landing figures,
    // which a stream's fresh own-draft rate lacks, say how far: two sources
    // agreeing on a continuation is no weaker evidence than the record alone.
    if (same_as_own(query.own_continuation, match.continuation)) {
        record.offers().note_same_as_own();
        Draft agreed = copy_of(record, cost, match, query);
        agreed.source = DraftSource::own_context;
        agreed.history = recall::CopyHistory::first;
        return agreed;
    }
    Draft copy = copy_of(record, cost, match, query);
    const auto window = static_cast<uint32_t>(copy.tokens.size());
    if (record.offers().decide(match.length, query.history, query.own_expected, window) == recall::OfferKind::none) {
        return draft;
    }
    return copy;
}

Draft Drafter::graft_draft(Stream& stream, int32_t room, bool* asked) const {
    Draft draft;
    *asked = record_ && room > 0 && stream.offer_state().grafted_may_ask();
    if (!*asked) return draft;
    const CopyQuery query = copy_query(stream, room);
    recall::Match match = record_->lookup(query.tail, static_cast<uint32_t>(room));
    if (match.length < recall::Index::kKeyIds || match.continuation.empty()) return draft;
    return copy_of(*record_, cost_, match, query);
}

void Drafter::stream_outcome(Stream& stream) {
    const Draft& draft = stream.draft();
    const auto landed = static_cast<uint32_t>(stream.last_landed_drafts());
    if (draft.source == DraftSource::record) {
        stream.offer_state().record_copy_outcome(static_cast<uint32_t>(draft.tokens.size()), landed);
        // The copy's round also tells what the own drafts would have landed.
        stream.offer_state().record_own_drafts(static_cast<uint32_t>(stream.last_displaced_landed()));
    } else {
        stream.offer_state().record_own_drafts(draft.source == DraftSource::own_context ? landed : 0);
    }
}

void Drafter::record_outcome(recall::Record& record, const Draft& draft, int32_t landed_drafts, int32_t own_displaced) {
    if (draft.source != DraftSource::record) return;
    record.offers().record_outcome(static_cast<uint32_t>(draft.match_length), draft.history,
                                   static_cast<uint32_t>(draft.tokens.size()), static_cast<uint32_t>(landed_drafts),
                                   static_cast<uint32_t>(std::max(0, own_displaced)));
}

void Drafter::after_landing(Stream& stream) const {
    stream_outcome(stream);
    if (record_) record_outcome(*record_, stream.draft(), stream.last_landed_drafts(), stream.last_displaced_landed());
}

}  // namespace tf::engine
