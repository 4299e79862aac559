#include "engine/drafter.h"

#include <algorithm>

namespace tf::engine {

namespace {

// The per-token landing probability of record copies with this match length,
// from how the bucket's earlier copies landed (optimistic before any).
double copy_landing_probability(const recall::LandingSnapshot& landing, uint32_t match_length) {
    const recall::BucketLanding& bucket = landing.buckets[static_cast<size_t>(recall::bucket_of(match_length))];
    if (bucket.tokens_drafted == 0) return 0.9;
    return std::clamp(static_cast<double>(bucket.tokens_landed) / static_cast<double>(bucket.tokens_drafted), 0.05, 0.99);
}

// A record copy of `match`, as long as it pays under this bucket's landing.
Draft copy_of(recall::Record& record, const CostCurve& cost, const recall::Match& match) {
    const double p = copy_landing_probability(record.offers().snapshot(), match.length);
    const auto available = static_cast<int32_t>(match.continuation.size());
    const int32_t window = std::max(1, best_window(cost, p, available));
    Draft draft;
    draft.source = DraftSource::record;
    draft.match_length = static_cast<int32_t>(match.length);
    draft.tokens.assign(match.continuation.begin(), match.continuation.begin() + window);
    return draft;
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
    if (may_ask_record(stream)) {
        Draft copy = record_draft(*record_, cost_, lookup_tail(stream), room, stream.offer_state().own_expected_landed());
        if (copy.source == DraftSource::record) return copy;
    }
    return own;
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

Draft Drafter::record_draft(recall::Record& record, const CostCurve& cost, std::span<const uint32_t> tail,
                            int32_t room, double own_expected) {
    Draft draft;
    if (room <= 0) return draft;
    recall::Match match = record.lookup(tail, static_cast<uint32_t>(room));
    if (match.length < recall::Index::kKeyIds || match.continuation.empty()) return draft;
    const auto available = static_cast<uint32_t>(match.continuation.size());
    if (record.offers().decide(match.length, own_expected, available) == recall::OfferKind::none) return draft;
    return copy_of(record, cost, match);
}

Draft Drafter::graft_draft(Stream& stream, int32_t room, bool* asked) const {
    Draft draft;
    *asked = record_ && room > 0 && stream.offer_state().grafted_may_ask();
    if (!*asked) return draft;
    recall::Match match = record_->lookup(lookup_tail(stream), static_cast<uint32_t>(room));
    if (match.length < recall::Index::kKeyIds || match.continuation.empty()) return draft;
    return copy_of(*record_, cost_, match);
}

void Drafter::stream_outcome(Stream& stream) {
    const Draft& draft = stream.draft();
    const auto landed = static_cast<uint32_t>(stream.last_landed_drafts());
    if (draft.source == DraftSource::record) {
        stream.offer_state().record_copy_outcome(landed);
    } else {
        stream.offer_state().record_own_drafts(draft.source == DraftSource::own_context ? landed : 0);
    }
}

void Drafter::record_outcome(recall::Record& record, const Draft& draft, int32_t landed_drafts) {
    if (draft.source != DraftSource::record) return;
    record.offers().record_outcome(static_cast<uint32_t>(draft.match_length), static_cast<uint32_t>(draft.tokens.size()),
                                   static_cast<uint32_t>(landed_drafts));
}

void Drafter::after_landing(Stream& stream) const {
    stream_outcome(stream);
    if (record_) record_outcome(*record_, stream.draft(), stream.last_landed_drafts());
}

}  // namespace tf::engine
