// Landing statistics and the offer policy: when a stream is offered a copy of
// the record's continuation instead of its own drafts.
//
// The rules kept here (docs/recall.md, "Offer policy"):
//  - the record needs a match of at least 16 tokens, and its copy replaces the
//    own-context draft only when it is expected to land strictly more tokens
//    than the stream's own drafts have recently, so the own context, consulted
//    first, keeps ties;
//  - that expectation is learnt from past copies, separately for the match
//    lengths 16-31, 32-63 and 64+;
//  - a failed copy is paid for with the own drafts it displaced that round;
//  - after a run of copies that land nothing the record is distrusted and
//    only offers occasional trial copies, spaced further apart while they keep
//    failing; a stream whose copy landed nothing skips the record for its
//    next four rounds;
//  - a grafted lane consults the record every round while its grafts are
//    landing and only every eighth round when they are not.
//
// Within each match-length bucket the statistics are also kept apart by how
// the asking stream's earlier copies in the same reply landed (CopyHistory):
// a reply being regenerated whole keeps landing its copies whole, while a
// copy cut short by a renamed identifier predicts the next one is cut short
// too. A history's own figures are used once it has seen a few copies; until
// then the bucket's stand in.
//
// Two small pure classes, deterministic (no clocks, no randomness):
//  - OfferPolicy, one per record: per match-length bucket and history, how
//    copies landed and how many tokens a copy is expected to land; the
//    "copies keep missing" state and its probes. DELETE resets it.
//  - StreamOfferState, one per stream: the four-round leave-alone, the
//    stream's own drafts' recent landing, its copies' history and the
//    grafted-lane cadence.
// The engine, per round of a stream: start_round(); its own context first;
// then, if may_ask_record() (or grafted_may_ask() on a grafted lane), a
// record lookup; with a match, OfferPolicy::decide(match length, history,
// own_expected_landed(), window); after verification, record_outcome() on
// the policy and record_copy_outcome() on the stream.
//
// OfferPolicy and StreamOfferState are not thread-safe; SharedOfferPolicy
// wraps an OfferPolicy in a mutex for a record shared by many streams.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <mutex>

namespace tf::recall {

// Landing statistics are tracked per match-length band (docs/recall.md, "Offer policy").
enum class MatchBucket { from16to31 = 0, from32to63 = 1, from64 = 2 };
inline constexpr size_t kMatchBuckets = 3;
// The bucket of a match of `match_length` >= 16 ids.
MatchBucket bucket_of(uint32_t match_length);
const char* to_string(MatchBucket bucket);  // "16-31", "32-63", "64+"

// How the stream's copies earlier in the same reply landed.
enum class CopyHistory {
    first = 0,        // no copy of this reply verified yet
    after_whole = 1,  // the last one landed every token it drafted
    after_short = 2,  // the last one stopped short (or landed nothing)
};
inline constexpr size_t kCopyHistories = 3;
const char* to_string(CopyHistory history);  // "first", "after_whole", "after_short"

struct BucketLanding {
    uint64_t copies_offered = 0;  // copies verified (record_outcome calls)
    uint64_t tokens_drafted = 0;
    uint64_t tokens_landed = 0;
    uint64_t copies_missed = 0;   // copies that landed nothing
    uint64_t copies_whole = 0;    // copies that landed every token
    // Tokens the stream's own drafts would have landed in the rounds these
    // copies took: what the copies cost (docs/recall.md, "Offer policy").
    uint64_t own_tokens_displaced = 0;
    double expected_landed = 0;  // tokens the next copy is expected to land
    // Per-token landing probability of the next copy (each token lands given
    // the one before did), from recent copies; it sizes the copy's window.
    double landing_probability = 0;
};

struct LandingSnapshot {
    std::array<BucketLanding, kMatchBuckets> buckets;
    // The same copies split by history: by_history[bucket][history].
    std::array<std::array<BucketLanding, kCopyHistories>, kMatchBuckets> by_history;
    uint64_t copies_offered = 0;  // sums over the buckets
    uint64_t tokens_drafted = 0;
    uint64_t tokens_landed = 0;
    uint64_t own_tokens_displaced = 0;
    // Record matches not offered because the stream's own context already
    // drafts the same tokens.
    uint64_t copies_same_as_own = 0;
    uint64_t probes_offered = 0;
    bool copies_keep_missing = false;
    uint32_t probe_spacing = 0;  // asks between probes while copies keep missing
};

enum class OfferKind {
    none,   // draft from the stream's own context
    copy,   // offer the record's continuation
    probe,  // the record's copies keep missing; offer one anyway to learn whether they land again
};

class OfferPolicy {
   public:
    // Optimistic prior: a fresh record's copies are expected to land this
    // many tokens, so that a fresh record gets tried against a stream whose
    // own drafts land fewer per round.
    static constexpr double kPriorLanded = 8.0;
    // Each outcome moves its bucket's expectation by this fraction of the
    // difference (a decayed mean: the last ~8 copies weigh most).
    static constexpr double kDecay = 1.0 / 8;
    // This many copies in a row that land nothing, record-wide: copies keep missing.
    static constexpr uint32_t kMissesToStop = 8;
    // While copies keep missing, the first probe comes after this many asks;
    // each probe that misses doubles the spacing (8, 16, 32, ...) up to the
    // cap; a copy that lands ends the spell.
    static constexpr uint32_t kFirstProbeSpacing = 8;
    static constexpr uint32_t kMaxProbeSpacing = 1u << 16;
    // A history's own figures stand in for its bucket's once it has seen
    // this many copies.
    static constexpr uint64_t kHistoryMinCopies = 4;
    // Per-token landing probability: a fresh estimate, the decay of each
    // older copy's weight, and the weight of the bucket's probability in a
    // history's estimate (in tokens).
    static constexpr double kPriorProbability = 0.9;
    static constexpr double kRateDecay = 0.95;
    static constexpr double kBucketWeight = 8.0;

    OfferPolicy();

    // Called when a stream whose record lookup found a match of
    // `match_length` (>= 16) ids asks whether to use it.
    // own_expected_landed: tokens the stream's own drafts have landed per
    // round lately (StreamOfferState::own_expected_landed()).
    // continuation_length: ids the copy would draft (a copy cannot land more).
    // A copy is offered only when its expected landing is strictly greater:
    // the own context wins ties. Counts the ask toward the next probe.
    // history: how the stream's earlier copies in this reply landed.
    OfferKind decide(uint32_t match_length, CopyHistory history, double own_expected_landed,
                     uint32_t continuation_length = std::numeric_limits<uint32_t>::max());
    OfferKind decide(uint32_t match_length, double own_expected_landed,
                     uint32_t continuation_length = std::numeric_limits<uint32_t>::max()) {
        return decide(match_length, CopyHistory::first, own_expected_landed, continuation_length);
    }
    bool should_offer(uint32_t match_length, double own_expected_landed,
                      uint32_t continuation_length = std::numeric_limits<uint32_t>::max()) {
        return decide(match_length, own_expected_landed, continuation_length) != OfferKind::none;
    }

    // A copy offered for a match of `match_length` drafted `drafted` tokens
    // and `landed` of them were accepted by the target model; the stream's
    // own drafts would have landed `own_displaced` in that round.
    void record_outcome(uint32_t match_length, CopyHistory history, uint32_t drafted, uint32_t landed,
                        uint32_t own_displaced = 0);
    void record_outcome(uint32_t match_length, uint32_t drafted, uint32_t landed) {
        record_outcome(match_length, CopyHistory::first, drafted, landed);
    }
    // A record match was left unused: the own context drafts the same tokens.
    void note_same_as_own() { ++copies_same_as_own_; }

    // The tokens a copy for a match of this length is expected to land.
    double expected_landed(uint32_t match_length) const;
    double expected_landed(uint32_t match_length, CopyHistory history) const;
    // The per-token landing probability that sizes such a copy's window.
    double landing_probability(uint32_t match_length, CopyHistory history) const;
    bool copies_keep_missing() const { return keep_missing_; }
    LandingSnapshot snapshot() const;
    // Forgets all landing statistics and the distrust state, as a DELETE
    // requires (docs/recall.md, "DELETE").
    void reset();

   private:
       // Decayed geometric counts behind landing_probability: tokens that
       // landed, and copies that stopped short.
       struct RateCounts {
           double landed = 0;
           double short_copies = 0;
       };
       const BucketLanding& cell(uint32_t match_length, CopyHistory history) const;

       std::array<BucketLanding, kMatchBuckets> buckets_;
       std::array<std::array<BucketLanding, kCopyHistories>, kMatchBuckets> cells_;
       std::array<RateCounts, kMatchBuckets> bucket_rates_;
       std::array<std::array<RateCounts, kCopyHistories>, kMatchBuckets> cell_rates_;
       uint64_t copies_same_as_own_ = 0;
       uint32_t miss_streak_ = 0;
       bool keep_missing_ = false;
       uint32_t probe_spacing_ = kFirstProbeSpacing;
       uint32_t asks_since_probe_ = 0;
       uint32_t probes_in_flight_ = 0;
       uint64_t probes_offered_ = 0;
};

// One stream's side of the policy.
class StreamOfferState {
   public:
    static constexpr uint32_t kLeaveAloneRounds = 4;  // seed: "leaves the record alone for four rounds"
    static constexpr uint32_t kGraftIdleCadence = 8;  // seed: "every eighth round otherwise"
    static constexpr double kOwnDecay = 1.0 / 4;      // "lately": the last few rounds weigh most

    // Once at the start of each of the stream's rounds, before asking.
    void start_round();

    // Copy window: may this round ask the record? False for the four rounds
    // after a round whose record copy landed nothing.
    bool may_ask_record() const { return !leaving_alone_; }
    // Grafted lane: ask the record this round? Every round while its grafts
    // land (and in its first round), else every eighth round.
    bool grafted_may_ask() const { return grafts_landing_ || rounds_since_graft_ask_ >= kGraftIdleCadence; }

    // The record copy offered this round drafted `drafted` tokens and
    // landed `landed` of them.
    void record_copy_outcome(uint32_t drafted, uint32_t landed);
    // How this stream's copies so far landed: what its next copy is judged by.
    CopyHistory copy_history() const { return history_; }
    // The stream's own drafts landed `landed` tokens this round.
    void record_own_drafts(uint32_t landed);
    // A grafted lane asked the record this round; its grafts landed `landed`
    // tokens (0 also when the record had nothing to graft).
    void record_graft_outcome(uint32_t landed);

    // Tokens the stream's own drafts landed per round lately (a decayed
    // mean; 0 before any round).
    double own_expected_landed() const { return own_expected_; }
    uint64_t round() const { return round_; }

   private:
    uint64_t round_ = 0;
    uint32_t rounds_to_leave_alone_ = 0;
    bool leaving_alone_ = false;
    double own_expected_ = 0;
    bool grafts_landing_ = true;
    uint32_t rounds_since_graft_ask_ = 0;
    CopyHistory history_ = CopyHistory::first;
};

// An OfferPolicy behind a mutex: the record's policy, shared by every stream.
class SharedOfferPolicy {
   public:
       OfferKind decide(uint32_t match_length, CopyHistory history, double own_expected_landed,
                        uint32_t continuation_length = std::numeric_limits<uint32_t>::max()) {
           std::lock_guard lock(mutex_);
           return policy_.decide(match_length, history, own_expected_landed, continuation_length);
       }
    OfferKind decide(uint32_t match_length, double own_expected_landed,
                     uint32_t continuation_length = std::numeric_limits<uint32_t>::max()) {
        return decide(match_length, CopyHistory::first, own_expected_landed, continuation_length);
    }
    void record_outcome(uint32_t match_length, CopyHistory history, uint32_t drafted, uint32_t landed,
                        uint32_t own_displaced = 0) {
        std::lock_guard lock(mutex_);
        policy_.record_outcome(match_length, history, drafted, landed, own_displaced);
    }
    void record_outcome(uint32_t match_length, uint32_t drafted, uint32_t landed) {
        record_outcome(match_length, CopyHistory::first, drafted, landed);
    }
    void note_same_as_own() {
        std::lock_guard lock(mutex_);
        policy_.note_same_as_own();
    }
    double expected_landed(uint32_t match_length) const {
        std::lock_guard lock(mutex_);
        return policy_.expected_landed(match_length);
    }
    double landing_probability(uint32_t match_length, CopyHistory history) const {
        std::lock_guard lock(mutex_);
        return policy_.landing_probability(match_length, history);
    }
    LandingSnapshot snapshot() const {
        std::lock_guard lock(mutex_);
        return policy_.snapshot();
    }
    void reset() {
        std::lock_guard lock(mutex_);
        policy_.reset();
    }

   private:
    mutable std::mutex mutex_;
    OfferPolicy policy_;
};

}  // namespace tf::recall
