#include "recall/policy.h"

#include <algorithm>

namespace tf::recall {

MatchBucket bucket_of(uint32_t match_length) {
    if (match_length >= 64) return MatchBucket::from64;
    if (match_length >= 32) return MatchBucket::from32to63;
    return MatchBucket::from16to31;
}

const char* to_string(MatchBucket bucket) {
    switch (bucket) {
        case MatchBucket::from16to31: return "16-31";
        case MatchBucket::from32to63: return "32-63";
        case MatchBucket::from64: return "64+";
    }
    return "?";
}

OfferPolicy::OfferPolicy() { reset(); }

void OfferPolicy::reset() {
    for (BucketLanding& bucket : buckets_) bucket = BucketLanding{.expected_landed = kPriorLanded};
    miss_streak_ = 0;
    keep_missing_ = false;
    probe_spacing_ = kFirstProbeSpacing;
    asks_since_probe_ = 0;
    probes_in_flight_ = 0;
    probes_offered_ = 0;
}

double OfferPolicy::expected_landed(uint32_t match_length) const {
    return buckets_[static_cast<size_t>(bucket_of(match_length))].expected_landed;
}

OfferKind OfferPolicy::decide(uint32_t match_length, double own_expected_landed, uint32_t continuation_length) {
    if (match_length < 16 || continuation_length == 0) return OfferKind::none;
    const double cap = static_cast<double>(continuation_length);
    if (keep_missing_) {
        // "stops offering them, apart from a probe that comes rarer while
        // probes miss". A probe asks whether a fresh record would be tried
        // here, so it is judged by the prior, and still loses ties.
        if (++asks_since_probe_ < probe_spacing_) return OfferKind::none;
        if (!(std::min(kPriorLanded, cap) > own_expected_landed)) return OfferKind::none;
        asks_since_probe_ = 0;
        ++probes_in_flight_;
        ++probes_offered_;
        return OfferKind::probe;
    }
    // "expected to land more tokens than the stream's own drafts have
    // lately" — strictly more: "The stream's own context ... wins ties", and
    // "A copy that misses costs its round the drafts it took the place of",
    // so a copy must beat what the own drafts would land.
    const double expected = std::min(expected_landed(match_length), cap);
    return expected > own_expected_landed ? OfferKind::copy : OfferKind::none;
}

void OfferPolicy::record_outcome(uint32_t match_length, uint32_t drafted, uint32_t landed) {
    if (match_length < 16) return;
    landed = std::min(landed, drafted);
    BucketLanding& bucket = buckets_[static_cast<size_t>(bucket_of(match_length))];
    ++bucket.copies_offered;
    bucket.tokens_drafted += drafted;
    bucket.tokens_landed += landed;
    if (landed == 0) ++bucket.copies_missed;
    bucket.expected_landed += (static_cast<double>(landed) - bucket.expected_landed) * kDecay;

    const bool was_probe = keep_missing_ && probes_in_flight_ > 0;
    if (was_probe) --probes_in_flight_;
    if (landed > 0) {
        if (keep_missing_) {
            // Copies land again: the record is trusted afresh.
            keep_missing_ = false;
            for (BucketLanding& b : buckets_) b.expected_landed = std::max(b.expected_landed, kPriorLanded);
        }
        miss_streak_ = 0;
        probe_spacing_ = kFirstProbeSpacing;
        asks_since_probe_ = 0;
        probes_in_flight_ = 0;
        return;
    }
    if (keep_missing_) {
        // A probe that missed: the next comes twice as far away. (A copy
        // offered before the spell began and verified only now changes nothing.)
        if (was_probe) probe_spacing_ = std::min(probe_spacing_ * 2, kMaxProbeSpacing);
        return;
    }
    if (++miss_streak_ >= kMissesToStop) {
        keep_missing_ = true;
        probe_spacing_ = kFirstProbeSpacing;
        asks_since_probe_ = 0;
        probes_in_flight_ = 0;
    }
}

LandingSnapshot OfferPolicy::snapshot() const {
    LandingSnapshot s;
    s.buckets = buckets_;
    for (const BucketLanding& b : buckets_) {
        s.copies_offered += b.copies_offered;
        s.tokens_drafted += b.tokens_drafted;
        s.tokens_landed += b.tokens_landed;
    }
    s.probes_offered = probes_offered_;
    s.copies_keep_missing = keep_missing_;
    s.probe_spacing = keep_missing_ ? probe_spacing_ : 0;
    return s;
}

void StreamOfferState::start_round() {
    ++round_;
    ++rounds_since_graft_ask_;
    leaving_alone_ = rounds_to_leave_alone_ > 0;
    if (leaving_alone_) --rounds_to_leave_alone_;
}

void StreamOfferState::record_copy_outcome(uint32_t landed) {
    // A copy that landed nothing keeps this stream away from the record for
    // the next four rounds, not counting this one (docs/recall.md, "Offer policy").
    if (landed == 0) rounds_to_leave_alone_ = kLeaveAloneRounds;
}

void StreamOfferState::record_own_drafts(uint32_t landed) {
    own_expected_ += (static_cast<double>(landed) - own_expected_) * kOwnDecay;
}

void StreamOfferState::record_graft_outcome(uint32_t landed) {
    grafts_landing_ = landed > 0;
    rounds_since_graft_ask_ = 0;
}

}  // namespace tf::recall
