// The pure parts of constrained decoding and logprobs: the masks a stream
// puts on its rows, the cut of a draft the constraint forbids, and the
// host-side sampling and log-probabilities (no model: a 32-token vocabulary).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/host_sampling.h"
#include "engine/stream.h"

namespace tf::engine {
namespace {

constexpr int32_t kVocab = 32;

// Token i of the reply must be congruent to i modulo 3.
class StrideConstraint final : public Constraint {
public:
    std::unique_ptr<ConstraintState> start() const override { return std::make_unique<State>(); }
    static bool allows(int32_t index, TokenId token) { return token % 3 == index % 3; }

private:
    struct State final : ConstraintState {
        std::unique_ptr<ConstraintState> clone() const override { return std::make_unique<State>(*this); }
        void allowed(std::vector<uint64_t>& bits) const override {
            bits.assign(1, 0);
            for (TokenId id = 0; id < kVocab; ++id) {
                if (allows(taken, id)) bits[0] |= uint64_t{1} << id;
            }
        }
        bool advance(TokenId token) override { return allows(taken++, token); }
        bool complete() const override { return taken >= 10; }
        int32_t taken = 0;
    };
};

uint64_t mask_for(int32_t index) {
    uint64_t bits = 0;
    for (TokenId id = 0; id < kVocab; ++id) {
        if (StrideConstraint::allows(index, id)) bits |= uint64_t{1} << id;
    }
    return bits;
}

// A stream past its prompt whose reply so far is one token (0: allowed first).
Stream decoding_stream() {
    GenerationRequest spec;
    spec.prompt = {5, 6, 7};
    spec.max_tokens = 20;
    spec.constraint = std::make_shared<StrideConstraint>();
    Stream stream(1, 0, spec, 0, 64, nullptr);
    const StreamRows prefill = stream.next_rows(16, Draft{});
    EXPECT_EQ(prefill.masks, std::vector<uint64_t>{mask_for(0)}) << "the prompt's last row samples reply token 0";
    StreamUpdate update;
    stream.apply(Verdict{{0}, 0, {}}, update);
    return stream;
}

TEST(ConstrainedStream, EachRowCarriesTheMaskOfItsPlaceInTheReply) {
    Stream stream = decoding_stream();
    // Reply token 1 comes next: the draft is tokens 1, 2, 3 of the reply.
    const StreamRows rows = stream.next_rows(0, Draft{DraftSource::own_context, 4, {1, 5, 6}});
    ASSERT_EQ(rows.rows.size(), 4u);
    EXPECT_EQ(rows.mask_words, 1);
    EXPECT_EQ(rows.masks, (std::vector<uint64_t>{mask_for(1), mask_for(2), mask_for(3), mask_for(4)}));
}

TEST(ConstrainedStream, ADraftIsCutAtItsFirstForbiddenToken) {
    Stream stream = decoding_stream();
    // 4 would be reply token 2, which must be 2 mod 3: the draft stops before it.
    const StreamRows rows = stream.next_rows(0, Draft{DraftSource::record, 4, {1, 4, 6}});
    EXPECT_EQ(rows.draft, std::vector<TokenId>{1});
    ASSERT_EQ(rows.rows.size(), 2u);
    EXPECT_EQ(rows.masks, (std::vector<uint64_t>{mask_for(1), mask_for(2)}));
    EXPECT_EQ(stream.draft().tokens, std::vector<TokenId>{1});
}

TEST(ConstrainedStream, ADraftForbiddenFromItsFirstTokenIsNoDraft) {
    Stream stream = decoding_stream();
    const StreamRows rows = stream.next_rows(0, Draft{DraftSource::record, 4, {3, 5}});
    EXPECT_TRUE(rows.draft.empty());
    EXPECT_EQ(rows.rows.size(), 1u);
    EXPECT_EQ(stream.draft().source, DraftSource::none);
}

TEST(ConstrainedStream, TheReplyEndsAsStopWhenTheConstraintIsComplete) {
    Stream stream = decoding_stream();
    std::vector<TokenId> tokens;
    for (int32_t i = 1; i < 10; ++i) tokens.push_back(static_cast<TokenId>(i % 3));
    stream.next_rows(0, Draft{});
    StreamUpdate update;
    // Nine more tokens in one verdict (as if drafts had landed): the tenth completes it.
    Verdict verdict{tokens, 8, {}};
    stream.apply(verdict, update);
    EXPECT_EQ(stream.reply().size(), 10u);
    EXPECT_EQ(stream.finish_reason(), FinishReason::stop_token);
}

std::vector<float> test_logits() {
    std::vector<float> logits(kVocab);
    for (int32_t i = 0; i < kVocab; ++i) logits[static_cast<size_t>(i)] = std::sin(0.7f * static_cast<float>(i)) * 3.0f;
    return logits;
}

TEST(HostSampling, AMaskedRowSamplesAsModelSampleDoesWithTheForbiddenLogitsRemoved) {
    const std::vector<float> logits = test_logits();
    const std::vector<uint64_t> mask = {mask_for(2)};
    std::vector<float> removed = logits;
    for (TokenId id = 0; id < kVocab; ++id) {
        if (!StrideConstraint::allows(2, id)) removed[static_cast<size_t>(id)] = -std::numeric_limits<float>::infinity();
    }
    std::vector<float> scratch;
    for (const float temperature : {0.0f, 0.7f, 1.3f}) {
        SamplingParams params;
        params.temperature = temperature;
        params.seed = 99;
        for (int64_t position = 0; position < 200; ++position) {
            const TokenId token = sample_row(logits, mask, params, position, scratch);
            ASSERT_TRUE(StrideConstraint::allows(2, token)) << "temperature " << temperature;
            ASSERT_EQ(token, model::sample(removed, params, position));
        }
        params.top_k = 3;
        params.top_p = 0.8f;
        ASSERT_TRUE(StrideConstraint::allows(2, sample_row(logits, mask, params, 7, scratch)));
    }
    SamplingParams free;
    free.temperature = 0.9f;
    EXPECT_EQ(sample_row(logits, {}, free, 11, scratch), model::sample(logits, free, 11)) << "no mask: model::sample";
}

TEST(HostSampling, LogprobsAreTheLogSoftmaxAndTheTopIsSortedWithLowerIdsFirstOnTies) {
    std::vector<float> logits = test_logits();
    logits[4] = logits[9] = 10.0f;  // a tie at the top
    double total = 0;
    for (TokenId id = 0; id < kVocab; ++id) total += std::exp(logprob_of(logits, id, 0).logprob);
    EXPECT_NEAR(total, 1.0, 1e-5);
    const TokenLogprob entry = logprob_of(logits, 9, 4);
    ASSERT_EQ(entry.top.size(), 4u);
    EXPECT_EQ(entry.top[0].first, 4);
    EXPECT_EQ(entry.top[1].first, 9);
    EXPECT_EQ(entry.top[0].second, entry.logprob);
    for (size_t i = 1; i < entry.top.size(); ++i) EXPECT_GE(entry.top[i - 1].second, entry.top[i].second);
    EXPECT_EQ(logprob_of(logits, 0, 100).top.size(), static_cast<size_t>(kMaxTopLogprobs));
}

}  // namespace
}  // namespace tf::engine
