// The identity guarantee: copied tokens only survive where the target model
// agrees with them, so for a given request and seed the output tokens do not
// depend on whether Recall is off, on or read-only, nor on the other streams
// being served alongside (docs/recall.md, introduction; checked by bench-engine
// as described under benchmarking).
#include <gtest/gtest.h>

#include "engine_fixture.h"

namespace tf::engine {
namespace {

using namespace testing;

// 208 cases: fresh prompts, regenerated requests (same prompt and seed as an
// earlier case) and prompts that paste an earlier reply, with greedy and
// sampled decoding; grouped into concurrent mixes of 1 to 16 streams.
class IdentityTest : public ::testing::Test {
protected:
    static constexpr int kBaseCases = 96;
    static constexpr int32_t kMaxTokens = 24;

    // Cases and their references are built once for the suite: the references
    // alone are ~150 single-stream decodes.
    static void SetUpTestSuite() {
        std::mt19937 rng(20261130);
        auto random_tokens = [&](int n) {
            std::vector<TokenId> t;
            std::uniform_int_distribution<int> id(0, 8188);
            for (int i = 0; i < n; ++i) t.push_back(id(rng));
            return t;
        };
        const float temperatures[] = {0.0f, 0.7f, 1.0f};
        const float top_ps[] = {1.0f, 0.9f};
        for (int i = 0; i < kBaseCases; ++i) {
            std::vector<TokenId> prompt = random_tokens(8 + static_cast<int>(rng() % 40));
            cases_.push_back({make_request(prompt, temperatures[i % 3], top_ps[(i / 3) % 2], rng(), kMaxTokens), "fresh"});
        }
        // Reference: each case alone, no drafts at all.
        for (auto& c : cases_) reference_.push_back(alone(c.request));
        for (int i = 0; i < 56; ++i) {  // regenerated requests
            const size_t from = rng() % kBaseCases;
            cases_.push_back({cases_[from].request, "regenerated"});
            reference_.push_back(reference_[from]);
        }
        for (int i = 0; i < 56; ++i) {  // an agent pasting an earlier reply into its prompt
            const size_t from = rng() % kBaseCases;
            std::vector<TokenId> prompt = random_tokens(6);
            const auto& earlier = cases_[from].request.prompt;
            prompt.insert(prompt.end(), earlier.begin(), earlier.end());
            prompt.insert(prompt.end(), reference_[from].begin(), reference_[from].end());
            prompt.insert(prompt.end(), earlier.begin(), earlier.end());
            GenerationRequest r = make_request(prompt, temperatures[i % 3], 1.0f, rng(), kMaxTokens);
            cases_.push_back({r, "pasted"});
            reference_.push_back(alone(r));
        }
        // Concurrent mixes of 1..16 streams.
        for (size_t begin = 0, size = 1; begin < cases_.size(); begin += size, size = size % 16 + 1) {
            groups_.push_back({begin, std::min(cases_.size(), begin + size)});
        }
    }

    static std::vector<TokenId> alone(const GenerationRequest& r) {
        Engine engine(tinycode(), CostCurve::flat(64), plain_options());
        return engine.generate(r).tokens;
    }

    // Runs every group through `engine` and checks each reply against the reference.
    void expect_identical(Engine& engine, const char* mode) {
        for (auto [begin, end] : groups_) {
            std::vector<GenerationRequest> requests;
            for (size_t i = begin; i < end; ++i) requests.push_back(cases_[i].request);
            std::vector<std::vector<TokenId>> replies = run_together(engine, requests);
            for (size_t i = begin; i < end; ++i) {
                ASSERT_EQ(replies[i - begin], reference_[i])
                    << mode << ": case " << i << " (" << cases_[i].kind << ") in a group of " << end - begin;
            }
        }
    }

    static inline std::vector<Case> cases_;
    static inline std::vector<std::vector<TokenId>> reference_;
    static inline std::vector<std::pair<size_t, size_t>> groups_;
};

TEST_F(IdentityTest, TwoHundredCasesAreIdenticalWithRecallOffOnAndReadOnly) {
    ASSERT_GE(cases_.size(), 200u);
    {
        Engine off(tinycode(), CostCurve::flat(64), EngineOptions{});
        expect_identical(off, "recall off (own-context drafts)");
        EXPECT_GT(off.totals().own_drafted, 0);
    }
    TempDir dir("identity");
    {
        auto record = open_record(dir.path(), false);
        Engine on(tinycode(), CostCurve::flat(64), EngineOptions{}, nullptr, record.get());
        expect_identical(on, "recall on");
        EXPECT_GT(on.totals().copies_offered, 0) << "regenerated requests must be drafted from the record";
        EXPECT_GT(on.totals().copy_landed, 0);
    }
    {
        auto record = open_record(dir.path(), true);
        ASSERT_EQ(record->state(), recall::RecallState::read_only);
        const uint64_t ids_before = record->stats().ids;
        Engine read_only(tinycode(), CostCurve::flat(64), EngineOptions{}, nullptr, record.get());
        expect_identical(read_only, "recall read-only");
        EXPECT_GT(read_only.totals().copies_offered, 0);
        EXPECT_EQ(record->stats().ids, ids_before) << "read-only adds nothing";
    }
    {
        // Grafted lanes are off in every served configuration (docs/design.md);
        // this test enables them through an engine option.
        auto record = open_record(dir.path(), true);
        EngineOptions grafted;
        grafted.lanes.grafted = true;
        Engine engine(tinycode(), CostCurve::flat(64), grafted, nullptr, record.get());
        expect_identical(engine, "grafted lanes");
        EXPECT_GT(engine.totals().copy_landed, 0) << "grafts from the record landed";
        EXPECT_GT(engine.totals().own_landed, 0);
    }
}

// serve --draft-tokens N: own-context drafts of at most N tokens, and the
// same replies at every N (0 is the plain reference itself).
TEST_F(IdentityTest, OwnContextDraftsOfAnyLengthGiveTheSameReplies) {
    for (const int32_t n : {3}) {
        EngineOptions options;
        options.drafter.own_context_tokens = n;
        Engine engine(tinycode(), CostCurve::flat(64), options);
        expect_identical(engine, ("--draft-tokens " + std::to_string(n)).c_str());
        EXPECT_GT(engine.totals().own_drafted, 0);
        EXPECT_LE(engine.totals().own_drafted, n * engine.totals().rounds) << "a draft longer than " << n;
    }
}

TEST_F(IdentityTest, ConcurrentMixesWithoutDraftsMatchEachStreamAlone) {
    Engine plain(tinycode(), CostCurve::flat(64), plain_options());
    expect_identical(plain, "no drafts, concurrent");
}

// A 512-token prompt goes in one forward by default (LanesOptions), and how
// a prompt is chunked, alone or beside a decoding stream, changes no token.
TEST(LongPrompt, GoesInOneForwardAndChunkingChangesNoToken) {
    std::mt19937 rng(512);
    std::vector<TokenId> prompt(512);
    for (TokenId& t : prompt) t = static_cast<TokenId>(rng() % 8189);
    // Engines share the one tinycode backend and its KV stream ids: one at a time.
    for (const float temperature : {0.0f, 0.8f}) {
        GenerationRequest request = make_request(prompt, temperature, 1.0f, 77, 6);
        request.stop_tokens.clear();  // six tokens, whatever they are
        std::vector<TokenId> reference;
        {
            Engine whole(tinycode(), CostCurve::flat(64), plain_options());
            reference = whole.generate(request).tokens;
            ASSERT_EQ(reference.size(), 6u);
            EXPECT_EQ(whole.total_rounds(), 6) << "the prompt and the first token in one round, then one per token";
        }
        {
            EngineOptions chunked = plain_options();
            chunked.lanes.prefill_chunk = 100;
            Engine small(tinycode(), CostCurve::flat(64), chunked);
            EXPECT_EQ(small.generate(request).tokens, reference) << "temperature " << temperature;
            EXPECT_EQ(small.total_rounds(), 6 + 5);  // 512 rows in six chunks of at most 100
        }
        {
            // Beside a stream that is already decoding, the round's row limit
            // cuts the prompt; the tokens stay the same.
            Engine shared(tinycode(), CostCurve::flat(64), plain_options());
            GenerationRequest other = make_request({5, 6, 7}, 0.0f, 1.0f, 1, 40);
            other.stop_tokens.clear();
            shared.submit(other);
            shared.step();
            const RequestId id = shared.submit(request);
            std::vector<TokenId> reply;
            while (!shared.idle()) {
                for (const StreamUpdate& u : shared.step()) {
                    if (u.request == id) reply.insert(reply.end(), u.tokens.begin(), u.tokens.end());
                }
            }
            EXPECT_EQ(reply, reference) << "temperature " << temperature;
        }
    }
}

}  // namespace
}  // namespace tf::engine
