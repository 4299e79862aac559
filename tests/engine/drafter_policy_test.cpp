// The copy window's use of the offer policy, driven by scripted verdicts on
// a real record (no model: each round's verdict is written by the test).
// Rules checked (docs/recall.md, "Offer policy"): a copy needs a 16+ token
// match and must be expected to out-land the stream's recent own drafts; the
// own context is tried first and keeps ties; a copy that lands nothing makes
// the stream skip the record for four rounds; grafted lanes query it every
// round while grafts land and once per eight rounds after a miss.
#include <gtest/gtest.h>

#include "engine/drafter.h"
#include "engine_fixture.h"

namespace tf::engine {
namespace {

using namespace testing;

// A record holding S = 1000, 1001, ..., 1599 and a stream whose context is
// S[0..51): the record's continuation of its last 16+ tokens is S[51..].
class DrafterPolicy : public ::testing::Test {
protected:
    void SetUp() override {
        for (int i = 0; i < 600; ++i) s_.push_back(1000 + i);
        record_ = open_record(dir_.path(), false);
        record_->add(std::vector<uint32_t>(s_.begin(), s_.end()));
        drafter_ = std::make_unique<Drafter>(CostCurve::flat(64), DrafterOptions{}, record_.get());
        GenerationRequest spec;
        spec.prompt.assign(s_.begin(), s_.begin() + 50);
        spec.max_tokens = 500;
        stream_ = std::make_unique<Stream>(1, 0, spec, 0, 4096, nullptr);
        StreamUpdate update;
        stream_->next_rows(64, Draft{});
        stream_->apply(Verdict{{s_[50]}, 0}, update);  // the reply's first token
    }

    // One round: the drafter's draft lands `landed` tokens (capped by its
    // length), then the model's own token follows S. Returns the draft.
    Draft round(int landed) {
        Draft draft = drafter_->next_draft(*stream_);
        StreamRows rows = stream_->next_rows(0, draft);
        const size_t at = static_cast<size_t>(stream_->context().size());  // next index into S
        Verdict verdict;
        verdict.landed_drafts = std::min<int>(landed, static_cast<int>(rows.draft.size()));
        for (int i = 0; i <= verdict.landed_drafts; ++i) verdict.tokens.push_back(s_[at + static_cast<size_t>(i)]);
        StreamUpdate update;
        stream_->apply(verdict, update);
        drafter_->after_landing(*stream_);
        return draft;
    }

    TempDir dir_{"drafter-policy"};
    std::vector<TokenId> s_;
    std::unique_ptr<recall::Record> record_;
    std::unique_ptr<Drafter> drafter_;
    std::unique_ptr<Stream> stream_;
};

TEST_F(DrafterPolicy, AFreshRecordIsOfferedWhenOwnContextHasNothing) {
    Draft draft = round(0);
    EXPECT_EQ(draft.source, DraftSource::record);
    EXPECT_GE(draft.match_length, 16);
    ASSERT_FALSE(draft.tokens.empty());
    EXPECT_EQ(draft.tokens.front(), s_[51]) << "the record's continuation";
}

TEST_F(DrafterPolicy, AStreamWhoseCopyLandedNothingLeavesTheRecordAloneForFourRounds) {
    EXPECT_EQ(round(0).source, DraftSource::record);
    for (int i = 0; i < 4; ++i) EXPECT_NE(round(1).source, DraftSource::record) << "round " << i + 1 << " after the miss";
    EXPECT_EQ(round(1).source, DraftSource::record) << "the fifth round asks again";
}

TEST_F(DrafterPolicy, CopiesThatLandKeepBeingOffered) {
    for (int i = 0; i < 6; ++i) EXPECT_EQ(round(1000).source, DraftSource::record) << i;
    EXPECT_GT(stream_->counters().copy_landed, 0);
}

TEST_F(DrafterPolicy, OwnDraftsThatLandMoreThanTheRecordWin) {
    // A context that repeats S[0..20) forever: its own drafts always continue
    // it and (scripted) land in full, while the record's copies of S (which
    // goes on past 20) land nothing. Once the own drafts have landed more
    // lately than the record's copies are expected to, the own context wins.
    auto periodic = [&](size_t index) { return s_[index % 20]; };
    // The record also holds two periods of it, then something else.
    std::vector<uint32_t> earlier;
    for (size_t i = 0; i < 40; ++i) earlier.push_back(static_cast<uint32_t>(periodic(i)));
    for (uint32_t i = 0; i < 100; ++i) earlier.push_back(5000 + i);
    record_->add(earlier);
    GenerationRequest spec;
    for (size_t i = 0; i < 60; ++i) spec.prompt.push_back(periodic(i));
    spec.max_tokens = 2000;
    stream_ = std::make_unique<Stream>(2, 0, spec, 0, 4096, nullptr);
    StreamUpdate update;
    stream_->next_rows(128, Draft{});
    stream_->apply(Verdict{{periodic(60)}, 0}, update);
    std::vector<DraftSource> sources;
    for (int i = 0; i < 40; ++i) {
        Draft draft = drafter_->next_draft(*stream_);
        sources.push_back(draft.source);
        StreamRows rows = stream_->next_rows(0, draft);
        const size_t at = static_cast<size_t>(stream_->context().size());
        Verdict verdict;
        verdict.landed_drafts = draft.source == DraftSource::own_context ? static_cast<int32_t>(rows.draft.size()) : 0;
        for (int j = 0; j <= verdict.landed_drafts; ++j) verdict.tokens.push_back(periodic(at + static_cast<size_t>(j)));
        stream_->apply(verdict, update);
        drafter_->after_landing(*stream_);
    }
    EXPECT_EQ(sources.front(), DraftSource::record) << "a fresh record is tried first";
    EXPECT_EQ(sources.back(), DraftSource::own_context);
    EXPECT_GT(stream_->offer_state().own_expected_landed(), record_->offers().expected_landed(16))
        << "the own context now lands more than the record is expected to";
}

TEST_F(DrafterPolicy, GraftedLanesAskEachRoundWhileGraftsLandAndEveryEighthOtherwise) {
    bool asked = false;
    std::vector<bool> asks;
    // Grafts land: the lane asks every round.
    for (int i = 0; i < 3; ++i) {
        drafter_->start_round(*stream_);
        drafter_->graft_draft(*stream_, 8, &asked);
        asks.push_back(asked);
        stream_->offer_state().record_graft_outcome(5);
    }
    EXPECT_EQ(asks, std::vector<bool>(3, true));
    // A graft that landed nothing: the next ask is eight rounds later.
    stream_->offer_state().record_graft_outcome(0);
    asks.clear();
    for (int i = 0; i < 8; ++i) {
        drafter_->start_round(*stream_);
        drafter_->graft_draft(*stream_, 8, &asked);
        asks.push_back(asked);
        if (asked) stream_->offer_state().record_graft_outcome(0);
    }
    EXPECT_EQ(asks, (std::vector<bool>{false, false, false, false, false, false, false, true}));
}

TEST_F(DrafterPolicy, ARecordWhoseCopiesKeepMissingStopsOfferingThemApartFromRarerProbes) {
    const std::vector<uint32_t> tail(s_.begin() + 30, s_.begin() + 51);
    std::vector<int> offered_at;
    for (int ask = 0; ask < 200; ++ask) {
        CopyQuery query;
        query.tail = tail;
        query.room = 8;
        Draft copy = Drafter::record_draft(*record_, CostCurve::flat(64), query);
        if (copy.source == DraftSource::record) {
            offered_at.push_back(ask);
            Drafter::record_outcome(*record_, copy, 0, 0);  // every copy misses
        }
    }
    ASSERT_GE(offered_at.size(), 10u);
    // First the copies themselves, then probes whose spacing grows.
    std::vector<int> gaps;
    for (size_t i = 1; i < offered_at.size(); ++i) gaps.push_back(offered_at[i] - offered_at[i - 1]);
    EXPECT_EQ(gaps.front(), 1);
    EXPECT_GT(gaps.back(), gaps[gaps.size() / 2]) << "probes come rarer while they miss";
    EXPECT_TRUE(record_->offers().snapshot().copies_keep_missing);
}

// A record continuation the stream's own context already holds adds
// nothing: the own draft stays, the policy is not asked, the match is counted.
TEST_F(DrafterPolicy, NoCopyWhereTheOwnContextAlreadyDraftsTheSameTokens) {
    // The prompt holds S[0..300) and then S[0..50) again: the own context's
    // continuation of the tail is S[50..], exactly the record's.
    GenerationRequest spec;
    spec.prompt.assign(s_.begin(), s_.begin() + 300);
    spec.prompt.insert(spec.prompt.end(), s_.begin(), s_.begin() + 50);
    spec.max_tokens = 100;
    stream_ = std::make_unique<Stream>(3, 0, spec, 0, 4096, nullptr);
    StreamUpdate update;
    stream_->next_rows(512, Draft{});
    stream_->apply(Verdict{{s_[50]}, 0}, update);
    const recall::LandingSnapshot before = record_->offers().snapshot();
    Draft draft = drafter_->next_draft(*stream_);
    EXPECT_EQ(draft.source, DraftSource::own_context);
    ASSERT_FALSE(draft.tokens.empty());
    EXPECT_EQ(draft.tokens.front(), s_[51]);
    const recall::LandingSnapshot after = record_->offers().snapshot();
    EXPECT_EQ(after.copies_same_as_own, before.copies_same_as_own + 1);
    EXPECT_EQ(after.probes_offered, before.probes_offered);
}

// Where the record agrees with the own context, the own context still
// drafts, but as far as the record's copy would have run: a stream's fresh
// own-draft rate (one success, one failure) alone would stop it early.
TEST_F(DrafterPolicy, AnOwnDraftTheRecordAgreesWithRunsAsFarAsTheCopyWould) {
    // Each extra row costs a tenth of a one-row round.
    std::vector<double> cost;
    for (int m = 1; m <= 64; ++m) cost.push_back(1.0 + 0.1 * (m - 1));
    const CostCurve curve(cost);
    Drafter drafter(curve, DrafterOptions{}, record_.get());
    GenerationRequest spec;  // the prompt holds S[0..300) and then S[0..50) again
    spec.prompt.assign(s_.begin(), s_.begin() + 300);
    spec.prompt.insert(spec.prompt.end(), s_.begin(), s_.begin() + 50);
    spec.max_tokens = 100;
    Stream stream(4, 0, spec, 0, 4096, nullptr);
    StreamUpdate update;
    stream.next_rows(512, Draft{});
    stream.apply(Verdict{{s_[50]}, 0}, update);

    const int32_t room = std::min(DrafterOptions{}.max_draft, stream.draft_room());
    const int32_t own_window = best_window(curve, stream.own_rate().probability(), room);
    const double record_p = record_->offers().landing_probability(51, recall::CopyHistory::first);  // a 51-token match
    const int32_t record_window = best_window(curve, record_p, room);
    ASSERT_GT(record_window, own_window) << "the curve must tell the two rates apart";

    const Draft draft = drafter.next_draft(stream);
    EXPECT_EQ(draft.source, DraftSource::own_context);
    ASSERT_EQ(static_cast<int32_t>(draft.tokens.size()), record_window);
    for (size_t i = 0; i < draft.tokens.size(); ++i) EXPECT_EQ(draft.tokens[i], s_[51 + i]) << i;
    EXPECT_EQ(record_->offers().snapshot().copies_same_as_own, 1u);
    EXPECT_EQ(record_->offers().snapshot().copies_offered, 0u) << "no copy was offered";

    // With no record, the same stream drafts only its own window.
    const Drafter alone(curve, DrafterOptions{}, nullptr);
    EXPECT_EQ(static_cast<int32_t>(alone.next_draft(stream).tokens.size()), own_window);
}

// A copy that took the place of an own draft is charged what that draft
// would have landed: on the stream (its own drafts' recent landing) and on
// the record (own_tokens_displaced).
TEST_F(DrafterPolicy, ACopyIsChargedTheOwnDraftTokensItDisplaced) {
    Draft own;
    own.source = DraftSource::own_context;
    own.tokens = {s_[51], s_[52], 7};  // two of these would land
    CopyQuery query = drafter_->copy_query(*stream_, 8);
    Draft copy = Drafter::choose(own, Drafter::record_draft(*record_, drafter_->cost(), query));
    ASSERT_EQ(copy.source, DraftSource::record);
    EXPECT_EQ(copy.displaced, own.tokens);
    StreamRows rows = stream_->next_rows(0, copy);
    Verdict verdict;  // the copy's first four tokens land, then the model's own
    verdict.landed_drafts = 4;
    for (size_t i = 51; i <= 55; ++i) verdict.tokens.push_back(s_[i]);
    StreamUpdate update;
    stream_->apply(verdict, update);
    drafter_->after_landing(*stream_);
    EXPECT_EQ(stream_->last_displaced_landed(), 2);
    EXPECT_DOUBLE_EQ(stream_->offer_state().own_expected_landed(), 2.0 * recall::StreamOfferState::kOwnDecay);
    EXPECT_EQ(record_->offers().snapshot().own_tokens_displaced, 2u);
    EXPECT_EQ(stream_->offer_state().copy_history(), recall::CopyHistory::after_short);
}

// A copy's window is priced by the round it joins: the other streams' rows
// of the stream's last round. Beside 40 rows its rows are a smaller share of
// the round, so the copy runs longer than alone, up to the bound on how
// much slower it may make that round.
TEST_F(DrafterPolicy, ACopyBesideOtherStreamsIsPricedByTheirRound) {
    std::vector<double> cost;
    for (int m = 1; m <= 128; ++m) cost.push_back(1.0 + 0.1 * (m - 1));
    auto window = [&](double max_slowdown) {
        drafter_ = std::make_unique<Drafter>(CostCurve(cost), DrafterOptions{.copy_max_slowdown = max_slowdown},
                                             record_.get());
        const Draft copy = Drafter::record_draft(*record_, drafter_->cost(), drafter_->copy_query(*stream_, 32));
        EXPECT_EQ(copy.source, DraftSource::record);
        return copy.tokens.size();
    };
    EXPECT_EQ(stream_->others_last_round().rows, 0) << "the stream has been alone so far";
    const size_t alone = window(0.2);

    // The stream's last round, shared: its verdict says what the round held.
    stream_->next_rows(0, Draft{});
    Verdict verdict{{s_[51]}, 0};
    verdict.round_rows = 41;  // 41 streams of one row each, no copies
    verdict.round_plain_parts = 41;
    StreamUpdate update;
    stream_->apply(verdict, update);
    EXPECT_EQ(stream_->others_last_round().rows, 40);
    EXPECT_EQ(stream_->others_last_round().plain_rows, 40);
    EXPECT_EQ(stream_->others_last_round().plain_streams, 40);
    EXPECT_GT(window(10.0), alone);
    const size_t bounded = window(0.05);  // the round may grow by 5% of cost(41) = 5: two rows
    EXPECT_LT(bounded, alone);
    EXPECT_LE(1.0 + 0.1 * (41 + static_cast<double>(bounded) - 1), 1.05 * 5.0 + 1e-9);
}

// After a copy that landed whole, the stream's next copy is sized by the
// after_whole history: once that history has learnt that such copies land,
// its window is longer than a first copy's on a record whose other copies
// stop short.
TEST_F(DrafterPolicy, CopiesAfterAWholeLandingAreSizedByThatHistory) {
    std::vector<double> cost;
    for (int m = 1; m <= 128; ++m) cost.push_back(1.0 + 0.1 * (m - 1));
    drafter_ = std::make_unique<Drafter>(CostCurve(cost), DrafterOptions{}, record_.get());
    // Other streams' copies in this bucket stop short; after_whole ones land whole.
    for (int i = 0; i < 30; ++i) record_->offers().record_outcome(40, recall::CopyHistory::first, 10, 3);
    for (int i = 0; i < 30; ++i) record_->offers().record_outcome(40, recall::CopyHistory::after_whole, 10, 10);
    CopyQuery query = drafter_->copy_query(*stream_, 32);  // its tail S[0..51): the 32-63 bucket
    const Draft first = Drafter::record_draft(*record_, drafter_->cost(), query);
    query.history = recall::CopyHistory::after_whole;
    const Draft after_whole = Drafter::record_draft(*record_, drafter_->cost(), query);
    ASSERT_EQ(after_whole.source, DraftSource::record);
    EXPECT_EQ(after_whole.history, recall::CopyHistory::after_whole);
    EXPECT_GT(after_whole.tokens.size(), first.tokens.size());
}

}  // namespace
}  // namespace tf::engine
