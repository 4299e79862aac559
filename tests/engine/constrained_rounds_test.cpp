// Constrained decoding and logprobs on tinycode, through RoundDriver (the
// piece every serving path shares): each token keeps to the mask of its own
// row, draft rows included; the reply is the same tokens, with the same
// logprobs, whether its rounds verified no draft, own-context drafts or
// record copies, even copies of a reply the constraint would not allow.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "grammar/grammar_constraint.h"
#include "engine/round_driver.h"
#include "engine_fixture.h"
#include "tokenizer/tokenizer.h"

namespace tf::engine {
namespace {

using namespace testing;

// Token i of the reply must be congruent to i modulo 3, and the reply is
// complete after `length` tokens: the allowed set changes from row to row,
// so a draft row with the wrong mask would show.
class StrideConstraint final : public Constraint {
public:
    explicit StrideConstraint(int32_t length) : length_(length) {}

    std::unique_ptr<ConstraintState> start() const override { return std::make_unique<State>(length_); }

    static bool allows(int32_t index, TokenId token) { return token % 3 == index % 3; }

private:
    struct State final : ConstraintState {
        explicit State(int32_t length) : length(length) {}
        std::unique_ptr<ConstraintState> clone() const override { return std::make_unique<State>(*this); }
        void allowed(std::vector<uint64_t>& bits) const override {
            const int32_t vocab = tinycode().config().vocab_size;
            bits.assign(static_cast<size_t>((vocab + 63) / 64), 0);
            for (TokenId id = 0; id < vocab; ++id) {
                if (allows(taken, id)) bits[static_cast<size_t>(id / 64)] |= uint64_t{1} << (id % 64);
            }
        }
        bool advance(TokenId token) override { return allows(taken++, token); }
        bool complete() const override { return taken >= length; }
        int32_t length;
        int32_t taken = 0;
    };
    int32_t length_;
};

using Reply = DrivenReply;

// Drives `request` drafting only record copies, from a record that holds
// its prompt followed by `continuation`.
Reply drive_with_record(const GenerationRequest& request, const std::vector<TokenId>& continuation) {
    TempDir dir("constrained-rounds");
    auto record = open_record(dir.path(), false);
    std::vector<uint32_t> seen(request.prompt.begin(), request.prompt.end());
    seen.insert(seen.end(), continuation.begin(), continuation.end());
    record->add(seen);
    const Drafter copying(CostCurve::flat(64), DrafterOptions{.own_context = false}, record.get());
    return drive(request, &copying);
}

GenerationRequest constrained_request(int32_t length, float temperature) {
    std::vector<TokenId> prompt;
    for (int i = 0; i < 24; ++i) prompt.push_back((i * 389 + 17) % 8000);
    GenerationRequest r = make_request(prompt, temperature, 0.95f, 4242, 200);
    r.stop_tokens.clear();
    r.constraint = std::make_shared<StrideConstraint>(length);
    r.logprobs = 3;
    return r;
}

void expect_same_logprobs(const std::vector<TokenLogprob>& a, const std::vector<TokenLogprob>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].logprob, b[i].logprob) << "token " << i;  // bitwise: the same logits
        EXPECT_EQ(a[i].top, b[i].top) << "token " << i;
    }
}

TEST(ConstrainedRounds, EveryTokenKeepsToItsRowsMaskAndTheReplyEndsWhenTheConstraintIsComplete) {
    const Reply reply = drive(constrained_request(48, 0.8f), nullptr);
    ASSERT_EQ(reply.tokens.size(), 48u);
    for (size_t i = 0; i < reply.tokens.size(); ++i) {
        EXPECT_TRUE(StrideConstraint::allows(static_cast<int32_t>(i), reply.tokens[i])) << "token " << i;
    }
    EXPECT_EQ(reply.finish, FinishReason::stop_token);
    ASSERT_EQ(reply.logprobs.size(), reply.tokens.size());
    for (const TokenLogprob& entry : reply.logprobs) {
        ASSERT_EQ(entry.top.size(), 3u);
        EXPECT_LE(entry.logprob, 0.0f);
        EXPECT_LE(entry.logprob, entry.top.front().second);  // the mask may forbid the model's favourite
        EXPECT_GE(entry.top[0].second, entry.top[1].second);
        EXPECT_GE(entry.top[1].second, entry.top[2].second);
    }
}

TEST(ConstrainedRounds, OwnContextDraftsAndRecordCopiesLandTheSameTokensAndLogprobs) {
    const GenerationRequest request = constrained_request(64, 0.0f);
    const Reply plain = drive(request, nullptr);

    const Drafter own(CostCurve::flat(64), DrafterOptions{}, nullptr);
    const Reply with_own = drive(request, &own);
    EXPECT_EQ(with_own.tokens, plain.tokens);
    expect_same_logprobs(with_own.logprobs, plain.logprobs);

    // A record that holds this very reply after its prompt: copies land.
    const Reply with_copies = drive_with_record(request, plain.tokens);
    EXPECT_EQ(with_copies.tokens, plain.tokens);
    expect_same_logprobs(with_copies.logprobs, plain.logprobs);
    EXPECT_GT(with_copies.counters.copy_landed, 32) << "the record holds this very reply";
}

TEST(ConstrainedRounds, ARecordHoldingTheFreeReplyChangesNoConstrainedToken) {
    const GenerationRequest request = constrained_request(40, 0.0f);
    const Reply plain = drive(request, nullptr);
    // The record's continuation of this prompt is the unconstrained greedy
    // reply: at most its allowed prefix can be drafted, and the tokens stay.
    GenerationRequest free_request = request;
    free_request.constraint = nullptr;
    const Reply free_reply = drive(free_request, nullptr);
    const Reply with_copies = drive_with_record(request, free_reply.tokens);
    EXPECT_EQ(with_copies.tokens, plain.tokens);
}

TEST(ConstrainedRounds, LogprobsOfAFreeGreedyReplyNameItsTokenFirst) {
    GenerationRequest request = constrained_request(0, 0.0f);
    request.constraint = nullptr;
    request.max_tokens = 24;
    const Reply reply = drive(request, nullptr);
    ASSERT_EQ(reply.logprobs.size(), reply.tokens.size());
    for (size_t i = 0; i < reply.tokens.size(); ++i) {
        EXPECT_EQ(reply.logprobs[i].top.front().first, reply.tokens[i]) << "token " << i;
        EXPECT_EQ(reply.logprobs[i].top.front().second, reply.logprobs[i].logprob) << "token " << i;
    }
}

// The JSON grammar over tinycode's own vocabulary: a sampled reply is JSON
// of the schema's shape, and it is the same tokens with drafts and copies.
TEST(ConstrainedRounds, AJsonSchemaReplyParsesAndIsTheSameTokensWithCopies) {
    const tokenizer::Tokenizer tok = tokenizer::Tokenizer::load(tinycode_dir());
    const auto vocabulary = std::make_shared<const grammar::TokenVocabulary>(grammar::TokenMasker::bytes_of(tok),
                                                                    tinycode().config().eos_token_ids);
    const auto schema = grammar::Grammar::from_schema(
        R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},"size":{"type":"integer"},)"
        R"("ok":{"type":"boolean"}},"required":["name","size","ok"],"additionalProperties":false})");
    std::vector<TokenId> prompt;
    for (TokenId id : tok.encode("record = ", false, false)) prompt.push_back(id);
    GenerationRequest request = make_request(prompt, 0.9f, 1.0f, 7, 120);
    request.constraint = std::make_shared<grammar::GrammarConstraint>(schema, vocabulary);
    request.logprobs = 1;

    const Reply plain = drive(request, nullptr);
    ASSERT_EQ(plain.finish, FinishReason::stop_token) << "the object closed within 120 tokens";
    const std::vector<tokenizer::TokenId> ids(plain.tokens.begin(), plain.tokens.end());
    const nlohmann::json value = nlohmann::json::parse(tok.decode(ids));
    ASSERT_TRUE(value.is_object());
    EXPECT_TRUE(value["name"].is_string());
    EXPECT_LE(value["name"].get<std::string>().size(), 12u);
    EXPECT_TRUE(value["size"].is_number_integer());
    EXPECT_TRUE(value["ok"].is_boolean());
    EXPECT_EQ(value.size(), 3u);

    const Drafter own(CostCurve::flat(64), DrafterOptions{}, nullptr);
    EXPECT_EQ(drive(request, &own).tokens, plain.tokens);
    const Reply with_copies = drive_with_record(request, plain.tokens);
    EXPECT_EQ(with_copies.tokens, plain.tokens);
    expect_same_logprobs(with_copies.logprobs, plain.logprobs);
    EXPECT_GT(with_copies.counters.copy_landed, 0);
}

}  // namespace
}  // namespace tf::engine
