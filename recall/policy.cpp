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

const char* to_string(CopyHistory history) {
    switch (history) {
        case CopyHistory::first: return "first";
        case CopyHistory::after_whole: return "after_whole";
        case CopyHistory::after_short: return "after_short";
    }
    return "?";
}

namespace {

double geometric_probability(double landed, double short_copies) {
    return std::clamp(landed / (landed + short_copies), 0.05, 0.99);
}

}  // namespace

OfferPolicy::OfferPolicy() { reset(); }

void OfferPolicy::reset() {
    const BucketLanding fresh{.expected_landed = kPriorLanded, .landing_probability = kPriorProbability};
    // The prior is worth ten tokens: nine that landed and one copy cut short.
    const RateCounts prior{.landed = 9, .short_copies = 1};
    buckets_.fill(fresh);
    bucket_rates_.fill(prior);
    for (size_t b = 0; b < kMatchBuckets; ++b) {
        cells_[b].fill(fresh);
        cell_rates_[b].fill(RateCounts{});
    }
    copies_same_as_own_ = 0;
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

const BucketLanding& OfferPolicy::cell(uint32_t match_length, CopyHistory history) const {
    return cells_[static_cast<size_t>(bucket_of(match_length))][static_cast<size_t>(history)];
}

double OfferPolicy::expected_landed(uint32_t match_length, CopyHistory history) const {
    const BucketLanding& by_history = cell(match_length, history);
    return by_history.copies_offered >= kHistoryMinCopies ? by_history.expected_landed : expected_landed(match_length);
}

double OfferPolicy::landing_probability(uint32_t match_length, CopyHistory history) const {
    return cell(match_length, history).landing_probability;
}

OfferKind OfferPolicy::decide(uint32_t match_length, CopyHistory history, double own_expected_landed,
                              uint32_t continuation_length) {
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
    const double expected = std::min(expected_landed(match_length, history), cap);
    return expected > own_expected_landed ? OfferKind::copy : OfferKind::none;
}

void OfferPolicy::record_outcome(uint32_t match_length, CopyHistory history, uint32_t drafted, uint32_t landed,
                                 uint32_t own_displaced) {
    if (match_length < 16) return;
    landed = std::min(landed, drafted);
    const auto b = static_cast<size_t>(bucket_of(match_length));
    const auto h = static_cast<size_t>(history);
    const bool whole = drafted > 0 && landed == drafted;
    auto count = [&](BucketLanding& landing, RateCounts& rate) {
        ++landing.copies_offered;
        landing.tokens_drafted += drafted;
        landing.tokens_landed += landed;
        if (landed == 0) ++landing.copies_missed;
        if (whole) ++landing.copies_whole;
        landing.own_tokens_displaced += own_displaced;
        landing.expected_landed += (static_cast<double>(landed) - landing.expected_landed) * kDecay;
        rate.landed = rate.landed * kRateDecay + landed;
        rate.short_copies = rate.short_copies * kRateDecay + (whole ? 0.0 : 1.0);
    };
    count(buckets_[b], bucket_rates_[b]);
    count(cells_[b][h], cell_rates_[b][h]);
    buckets_[b].landing_probability = geometric_probability(bucket_rates_[b].landed, bucket_rates_[b].short_copies);
    // A history's probability leans on its bucket's, worth kBucketWeight
    // tokens, until its own copies outweigh that. Every history of the
    // bucket is refreshed, since the bucket's share of each just moved.
    for (size_t other = 0; other < kCopyHistories; ++other) {
        const RateCounts& own = cell_rates_[b][other];
        const double p = buckets_[b].landing_probability;
        cells_[b][other].landing_probability =
            geometric_probability(own.landed + kBucketWeight * p, own.short_copies + kBucketWeight * (1 - p));
    }

    const bool was_probe = keep_missing_ && probes_in_flight_ > 0;
    if (was_probe) --probes_in_flight_;
    if (landed > 0) {
        if (keep_missing_) {
            // Copies land again: the record is trusted afresh.
            keep_missing_ = false;
            for (size_t i = 0; i < kMatchBuckets; ++i) {
                buckets_[i].expected_landed = std::max(buckets_[i].expected_landed, kPriorLanded);
                for (BucketLanding& c : cells_[i]) c.expected_landed = std::max(c.expected_landed, kPriorLanded);
            }
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
    s.by_history = cells_;
    for (const BucketLanding& b : buckets_) {
        s.copies_offered += b.copies_offered;
        s.tokens_drafted += b.tokens_drafted;
        s.tokens_landed += b.tokens_landed;
        s.own_tokens_displaced += b.own_tokens_displaced;
    }
    s.copies_same_as_own = copies_same_as_own_;
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

void StreamOfferState::record_copy_outcome(uint32_t drafted, uint32_t landed) {
    // A copy that landed nothing keeps this stream away from the record for
    // the next four rounds, not counting this one (docs/recall.md, "Offer policy").
    if (landed == 0) rounds_to_leave_alone_ = kLeaveAloneRounds;
    history_ = drafted > 0 && landed >= drafted ? CopyHistory::after_whole : CopyHistory::after_short;
}

void StreamOfferState::record_own_drafts(uint32_t landed) {
    own_expected_ += (static_cast<double>(landed) - own_expected_) * kOwnDecay;
}

void StreamOfferState::record_graft_outcome(uint32_t landed) {
    grafts_landing_ = landed > 0;
    rounds_since_graft_ask_ = 0;
}

}  // namespace tf::recall
