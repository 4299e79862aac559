// Landing statistics and the offer policy, driven by scripted landing
// sequences (recall/policy.h). Every decision is a pure function of the
// script: no clocks, no randomness.
#include <gtest/gtest.h>

#include <thread>

#include "recall/policy.h"

namespace tf::recall {
namespace {

// Match lengths fall into three buckets: 16-31, 32-63 and 64 and up
// (docs/recall.md, "Offer policy").
TEST(LandingBuckets, AreMatchesOf16To31And32To63And64OrMore) {
    EXPECT_EQ(bucket_of(16), MatchBucket::from16to31);
    EXPECT_EQ(bucket_of(31), MatchBucket::from16to31);
    EXPECT_EQ(bucket_of(32), MatchBucket::from32to63);
    EXPECT_EQ(bucket_of(63), MatchBucket::from32to63);
    EXPECT_EQ(bucket_of(64), MatchBucket::from64);
    EXPECT_EQ(bucket_of(100000), MatchBucket::from64);
    EXPECT_STREQ(to_string(MatchBucket::from32to63), "32-63");
}

// Each bucket learns its own expectation from how earlier copies with that
// match length landed; an outcome in one bucket leaves the others untouched
// (docs/recall.md, "Offer policy").
TEST(OfferPolicyExpectation, ComesFromHowEarlierCopiesLandedKeptApartPerBucket) {
    OfferPolicy policy;
    EXPECT_EQ(policy.expected_landed(20), OfferPolicy::kPriorLanded);
    policy.record_outcome(40, 24, 24);  // 8 + (24 - 8) / 8 = 10
    EXPECT_DOUBLE_EQ(policy.expected_landed(40), 10.0);
    policy.record_outcome(50, 24, 0);  // 10 + (0 - 10) / 8 = 8.75
    EXPECT_DOUBLE_EQ(policy.expected_landed(33), 8.75);
    EXPECT_DOUBLE_EQ(policy.expected_landed(20), OfferPolicy::kPriorLanded);  // other buckets untouched
    EXPECT_DOUBLE_EQ(policy.expected_landed(64), OfferPolicy::kPriorLanded);
    LandingSnapshot s = policy.snapshot();
    EXPECT_EQ(s.buckets[1].copies_offered, 2u);
    EXPECT_EQ(s.buckets[1].tokens_drafted, 48u);
    EXPECT_EQ(s.buckets[1].tokens_landed, 24u);
    EXPECT_EQ(s.buckets[1].copies_missed, 1u);
    EXPECT_EQ(s.copies_offered, 2u);
    EXPECT_EQ(s.tokens_landed, 24u);
}

// A copy needs a match of at least 16 tokens and must be expected to land
// more than the stream's own drafts have been landing recently
// (docs/recall.md, "Offer policy").
TEST(OfferPolicyDecision, OffersACopyExpectedToLandMoreThanTheStreamsOwnDrafts) {
    OfferPolicy policy;  // a fresh record: the optimistic prior of 8 tokens
    EXPECT_EQ(policy.decide(16, 0.0), OfferKind::copy);
    EXPECT_EQ(policy.decide(16, 7.9), OfferKind::copy);
    EXPECT_EQ(policy.decide(16, 9.0), OfferKind::none);
    EXPECT_EQ(policy.decide(15, 0.0), OfferKind::none);  // below the 16-token minimum
    // A copy cannot land more than it drafts.
    EXPECT_EQ(policy.decide(64, 2.0, 2), OfferKind::none);
    EXPECT_EQ(policy.decide(64, 2.0, 3), OfferKind::copy);
    EXPECT_EQ(policy.decide(64, 0.0, 0), OfferKind::none);
}

// Own context first: on a tie the stream keeps its own drafts; the record
// gets the round only when it is expected to land strictly more
// (docs/recall.md, "Offer policy").
TEST(OfferPolicyDecision, TheStreamsOwnContextWinsTies) {
    OfferPolicy policy;
    EXPECT_FALSE(policy.should_offer(40, OfferPolicy::kPriorLanded));
    EXPECT_FALSE(policy.should_offer(40, 5.0, 5));
    EXPECT_TRUE(policy.should_offer(40, 5.0, 6));
}

// A missed copy wastes the own drafts it replaced in that round
// (docs/recall.md, "Offer policy"). A miss lowers the bucket's expectation, so the streams whose own drafts
// land well stop giving their rounds to the record first.
TEST(OfferPolicyDecision, ACopyThatMissesCostsItsRoundTheDraftsItTookThePlaceOf) {
    OfferPolicy policy;
    EXPECT_TRUE(policy.should_offer(20, 7.5));
    policy.record_outcome(20, 16, 0);  // 8 -> 7
    EXPECT_FALSE(policy.should_offer(20, 7.5)) << "a stream landing 7.5 own tokens no longer gives up its drafts";
    EXPECT_TRUE(policy.should_offer(20, 6.5));
    EXPECT_TRUE(policy.should_offer(70, 7.5)) << "other buckets keep their own record";
}

// After enough misses in a row the record stops offering copies; only
// probes go out, spaced further apart after each probe that misses
// (docs/recall.md, "Offer policy").
TEST(OfferPolicyMissing, CopiesThatKeepMissingStopOffersApartFromProbesThatComeRarerWhileTheyMiss) {
    OfferPolicy policy;
    for (uint32_t i = 0; i < OfferPolicy::kMissesToStop; ++i) {
        EXPECT_FALSE(policy.copies_keep_missing());
        policy.record_outcome(70, 16, 0);
    }
    EXPECT_TRUE(policy.copies_keep_missing());
    // Probes at ask 8, then 16 asks later, then 32, 64: each probe misses.
    std::vector<int> probe_asks;
    int ask = 0;
    for (int probes = 0; probes < 4;) {
        ++ask;
        OfferKind kind = policy.decide(70, 0.0);
        ASSERT_NE(kind, OfferKind::copy) << "ask " << ask;
        if (kind == OfferKind::probe) {
            probe_asks.push_back(ask);
            policy.record_outcome(70, 16, 0);
            ++probes;
        }
    }
    EXPECT_EQ(probe_asks, (std::vector<int>{8, 24, 56, 120}));
    EXPECT_EQ(policy.snapshot().probes_offered, 4u);
    EXPECT_EQ(policy.snapshot().probe_spacing, 128u);
}

TEST(OfferPolicyMissing, AProbeThatLandsEndsTheSpellAndTheRecordIsTriedAfresh) {
    OfferPolicy policy;
    for (uint32_t i = 0; i < OfferPolicy::kMissesToStop; ++i) policy.record_outcome(20, 16, 0);
    ASSERT_TRUE(policy.copies_keep_missing());
    int ask = 0;
    while (policy.decide(20, 1.0) != OfferKind::probe) ASSERT_LT(++ask, 100);
    policy.record_outcome(20, 16, 12);
    EXPECT_FALSE(policy.copies_keep_missing());
    EXPECT_EQ(policy.decide(20, 1.0), OfferKind::copy);
    EXPECT_GE(policy.expected_landed(20), OfferPolicy::kPriorLanded);
    EXPECT_EQ(policy.snapshot().probe_spacing, 0u);
}

TEST(OfferPolicyMissing, ALandingCopyResetsTheMissStreak) {
    OfferPolicy policy;
    for (uint32_t i = 0; i + 1 < OfferPolicy::kMissesToStop; ++i) policy.record_outcome(40, 16, 0);
    policy.record_outcome(40, 16, 1);
    for (uint32_t i = 0; i + 1 < OfferPolicy::kMissesToStop; ++i) policy.record_outcome(40, 16, 0);
    EXPECT_FALSE(policy.copies_keep_missing());
}

// Probes obey the tie rule too: own drafts landing as much as a fresh record
// would still keep the round (docs/recall.md, "Offer policy").
TEST(OfferPolicyMissing, AProbeStillLosesToOwnDraftsThatLandAsMuchAsAFreshRecord) {
    OfferPolicy policy;
    for (uint32_t i = 0; i < OfferPolicy::kMissesToStop; ++i) policy.record_outcome(40, 16, 0);
    for (int ask = 0; ask < 1000; ++ask) ASSERT_EQ(policy.decide(40, OfferPolicy::kPriorLanded), OfferKind::none);
}

TEST(OfferPolicyMissing, ACopyVerifiedAfterTheSpellBeganDoesNotStretchTheProbeSpacing) {
    OfferPolicy policy;
    for (uint32_t i = 0; i < OfferPolicy::kMissesToStop; ++i) policy.record_outcome(40, 16, 0);
    policy.record_outcome(40, 16, 0);  // offered earlier, verified only now: not a probe
    EXPECT_EQ(policy.snapshot().probe_spacing, OfferPolicy::kFirstProbeSpacing);
}

TEST(OfferPolicyReset, ForgetsLandingRatesCountersAndTheMissingSpell) {
    OfferPolicy policy;
    for (uint32_t i = 0; i < OfferPolicy::kMissesToStop; ++i) policy.record_outcome(40, 16, 0);
    policy.reset();
    LandingSnapshot s = policy.snapshot();
    EXPECT_EQ(s.copies_offered, 0u);
    EXPECT_FALSE(s.copies_keep_missing);
    EXPECT_EQ(policy.expected_landed(40), OfferPolicy::kPriorLanded);
}

// After a copy that landed no token, the stream skips the record for the
// next four rounds (docs/recall.md, "Offer policy").
TEST(StreamOfferStateLeaveAlone, AStreamWhoseCopyLandedNothingLeavesTheRecordAloneForFourRounds) {
    StreamOfferState stream;
    std::string asked;
    for (int round = 1; round <= 12; ++round) {
        stream.start_round();
        asked += stream.may_ask_record() ? 'y' : '.';
        if (round == 2) stream.record_copy_outcome(6, 0);  // round 2's copy landed nothing
        if (round == 8) stream.record_copy_outcome(6, 3);  // landed: no pause
    }
    EXPECT_EQ(asked, "yy....yyyyyy");
}

// A stream's copy history: none verified yet, the last one landed whole, or
// it stopped short (a miss included).
TEST(StreamOfferStateHistory, FollowsHowTheLastCopyOfTheReplyLanded) {
    StreamOfferState stream;
    EXPECT_EQ(stream.copy_history(), CopyHistory::first);
    stream.record_copy_outcome(12, 12);
    EXPECT_EQ(stream.copy_history(), CopyHistory::after_whole);
    stream.record_copy_outcome(12, 11);
    EXPECT_EQ(stream.copy_history(), CopyHistory::after_short);
    stream.record_copy_outcome(12, 12);
    EXPECT_EQ(stream.copy_history(), CopyHistory::after_whole);
    stream.record_copy_outcome(12, 0);
    EXPECT_EQ(stream.copy_history(), CopyHistory::after_short);
    stream.record_own_drafts(5);  // own rounds leave the history alone
    EXPECT_EQ(stream.copy_history(), CopyHistory::after_short);
}

TEST(StreamOfferStateOwnDrafts, TrackWhatTheStreamsOwnDraftsLandedLately) {
    StreamOfferState stream;
    EXPECT_EQ(stream.own_expected_landed(), 0.0);
    stream.record_own_drafts(8);  // 0 + 8/4
    EXPECT_DOUBLE_EQ(stream.own_expected_landed(), 2.0);
    stream.record_own_drafts(0);  // 2 - 2/4
    EXPECT_DOUBLE_EQ(stream.own_expected_landed(), 1.5);
}

// Grafted lanes query the record in every round while their grafts keep
// landing, and after a miss only once per eight rounds (docs/recall.md,
// "Offer policy").
TEST(StreamOfferStateGrafted, AskEachRoundWhileGraftsLandAndEveryEighthRoundOtherwise) {
    StreamOfferState stream;
    std::string asked;
    for (int round = 1; round <= 30; ++round) {
        stream.start_round();
        bool ask = stream.grafted_may_ask();
        asked += ask ? 'y' : '.';
        if (!ask) continue;
        // Grafts land in rounds 1-3, then miss until round 19, then land again.
        stream.record_graft_outcome(round <= 3 || round >= 19 ? 4 : 0);
    }
    EXPECT_EQ(asked, "yyyy.......y.......yyyyyyyyyyy");
    EXPECT_EQ(asked.substr(0, 4), "yyyy");         // landing in 1-3; round 4 asks, misses
    EXPECT_EQ(asked.substr(4, 7), ".......");      // rounds 5-11 leave it
    EXPECT_EQ(asked[11], 'y');                     // round 12: the eighth round
    EXPECT_EQ(asked.substr(12, 7), ".......");
    EXPECT_EQ(asked[19], 'y');                     // round 20 lands again...
    EXPECT_EQ(asked.substr(20), std::string(10, 'y'));  // ...so every round after
}

TEST(SharedOfferPolicyThreads, OutcomesFromManyStreamsAllCount) {
    SharedOfferPolicy policy;
    std::vector<std::thread> streams;
    for (int t = 0; t < 4; ++t) {
        streams.emplace_back([&] {
            for (int i = 0; i < 1000; ++i) {
                policy.decide(40, 1.0);
                policy.record_outcome(40, 4, 2);
            }
        });
    }
    for (std::thread& t : streams) t.join();
    EXPECT_EQ(policy.snapshot().copies_offered, 4000u);
    EXPECT_EQ(policy.snapshot().tokens_landed, 8000u);
}

// Within a bucket, copies are also kept apart by the stream's history. A
// history's own expectation takes over from its bucket's after
// kHistoryMinCopies copies; the bucket's totals still count every copy.
TEST(OfferPolicyHistory, KeepsCopiesApartByHowTheStreamsEarlierCopiesLanded) {
    OfferPolicy policy;
    for (int i = 0; i < 3; ++i) policy.record_outcome(20, CopyHistory::after_whole, 24, 24);
    for (int i = 0; i < 6; ++i) policy.record_outcome(20, CopyHistory::after_short, 24, 2);
    LandingSnapshot s = policy.snapshot();
    EXPECT_EQ(s.buckets[0].copies_offered, 9u);
    EXPECT_EQ(s.buckets[0].copies_whole, 3u);
    EXPECT_EQ(s.by_history[0][1].copies_offered, 3u);
    EXPECT_EQ(s.by_history[0][1].copies_whole, 3u);
    EXPECT_EQ(s.by_history[0][2].copies_offered, 6u);
    EXPECT_EQ(s.by_history[0][2].tokens_landed, 12u);
    EXPECT_EQ(s.by_history[0][0].copies_offered, 0u);
    // Three copies are too few for after_whole's own figure: the bucket's stands in.
    EXPECT_DOUBLE_EQ(policy.expected_landed(20, CopyHistory::after_whole), policy.expected_landed(20));
    // after_short has six: its own decayed mean, well under the bucket's.
    EXPECT_LT(policy.expected_landed(20, CopyHistory::after_short), policy.expected_landed(20));
    // So a stream whose copies land whole is still offered one where a
    // stream whose copies stop short is not.
    policy.record_outcome(20, CopyHistory::after_whole, 24, 24);
    const double own = 5.0;  // after_short has learnt about 4.7, after_whole about 14.6
    EXPECT_EQ(policy.decide(20, CopyHistory::after_whole, own), OfferKind::copy);
    EXPECT_EQ(policy.decide(20, CopyHistory::after_short, own), OfferKind::none);
    // The window probability: whole landings push it to the cap, short ones down.
    EXPECT_GT(policy.landing_probability(20, CopyHistory::after_whole),
              policy.landing_probability(20, CopyHistory::after_short));
    EXPECT_LE(policy.landing_probability(20, CopyHistory::after_whole), 0.99);
    // Other buckets keep the prior.
    EXPECT_DOUBLE_EQ(policy.landing_probability(40, CopyHistory::after_whole), OfferPolicy::kPriorProbability);
}

// The per-token probability follows the geometric model: each copy's
// landed tokens are successes and a copy that stopped short one failure.
TEST(OfferPolicyHistory, LandingProbabilityCountsLandedTokensAgainstCopiesCutShort) {
    OfferPolicy policy;
    for (int i = 0; i < 200; ++i) policy.record_outcome(40, 10, 5);  // 5 landed, then a failure
    EXPECT_NEAR(policy.snapshot().buckets[1].landing_probability, 5.0 / 6.0, 1e-3);
    for (int i = 0; i < 200; ++i) policy.record_outcome(70, 10, 0);
    EXPECT_DOUBLE_EQ(policy.snapshot().buckets[2].landing_probability, 0.05);  // the floor
}

// What copies cost is charged: the own-draft tokens they displaced, and the
// matches left to an own context that drafts the same tokens.
TEST(OfferPolicyCost, CountsDisplacedOwnTokensAndMatchesTheOwnContextAlreadyHeld) {
    OfferPolicy policy;
    policy.record_outcome(20, CopyHistory::first, 8, 1, 3);
    policy.record_outcome(70, CopyHistory::after_whole, 8, 8, 2);
    policy.note_same_as_own();
    LandingSnapshot s = policy.snapshot();
    EXPECT_EQ(s.own_tokens_displaced, 5u);
    EXPECT_EQ(s.buckets[0].own_tokens_displaced, 3u);
    EXPECT_EQ(s.by_history[2][1].own_tokens_displaced, 2u);
    EXPECT_EQ(s.copies_same_as_own, 1u);
    policy.reset();
    s = policy.snapshot();
    EXPECT_EQ(s.own_tokens_displaced, 0u);
    EXPECT_EQ(s.copies_same_as_own, 0u);
    EXPECT_EQ(s.by_history[2][1].copies_offered, 0u);
    EXPECT_DOUBLE_EQ(s.by_history[2][1].landing_probability, OfferPolicy::kPriorProbability);
}

}  // namespace
}  // namespace tf::recall
