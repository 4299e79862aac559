// The engine on a random NemotronH checkpoint (Mamba2, attention and MLP
// layers): concurrent requests with own-context drafts, record copies
// (writing, then read-only) and grafted lanes reply the same tokens as each
// request alone without drafts, while drafts are rejected often enough that
// rounds roll the recurrent state back, and regenerated prompts resume from
// the prompt cache at the state kept at their end.
#include <gtest/gtest.h>

#include <random>
#include <span>

#include "engine_fixture.h"
#include "model/checkpoint_writer.h"

namespace tf::engine {
namespace {

using testing::make_request;
using testing::open_record;
using testing::TempDir;

model::Backend& nemotron_h() {
    static TempDir dir("nemotron-h");
    static std::unique_ptr<model::Backend> backend = [] {
        model::CheckpointSpec spec = model::preset_spec("tiny-nemotron-h");
        spec.vocab_size = 8192;  // the test record's tokenizer identity
        spec.eos_token_ids = {0};
        spec.seed = 41;
        model::write_checkpoint(spec, dir.path().string());
        return cpu::load_cpu_backend(dir.path().string(), 2);
    }();
    return *backend;
}

std::vector<TokenId> alone(const GenerationRequest& r) {
    Engine plain(nemotron_h(), CostCurve::flat(64), testing::plain_options());
    return testing::run_together(plain, {r}).front();
}

GenerationRequest request(std::vector<TokenId> prompt, float temperature, uint64_t seed, int32_t max_tokens) {
    GenerationRequest r = make_request(std::move(prompt), temperature, 1.0f, seed, max_tokens);
    r.stop_tokens = {0};
    return r;
}

std::vector<TokenId> joined(std::vector<TokenId> a, std::span<const TokenId> b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Per prompt P (random ids) and its greedy reply G: a detour, P + G[0..12)
// + other ids, which puts in the record a continuation of P + G[0..12) the
// model does not write; a request that reaches that point, P + G[0..10),
// greedy, which is offered the detour and rejects it; and P sampled.
struct Cases {
    std::vector<GenerationRequest> detours, reaching, sampled;
};

Cases cases() {
    std::mt19937 rng(24);
    Cases c;
    for (int i = 0; i < 4; ++i) {
        std::vector<TokenId> prompt(20 + 5 * i);
        for (TokenId& t : prompt) t = static_cast<TokenId>(1 + rng() % 8190);
        const std::vector<TokenId> greedy = alone(request(prompt, 0.0f, 0, 24));
        if (greedy.size() < 24) continue;  // stopped early: no room to detour
        std::vector<TokenId> other(greedy.rbegin(), greedy.rbegin() + 12);
        c.detours.push_back(request(joined(joined(prompt, std::span(greedy).first(12)), other), 0.0f, 0, 2));
        c.reaching.push_back(request(joined(prompt, std::span(greedy).first(10)), 0.0f, 0, 24));
        c.sampled.push_back(request(prompt, 0.9f, 100 + i, 24));
    }
    return c;
}

TEST(NemotronHEngine, DraftsCopiesAndGraftsGiveTheSameRepliesAsEachRequestAlone) {
    model::Backend& backend = nemotron_h();
    const Cases c = cases();
    ASSERT_GE(c.reaching.size(), 2u);
    std::vector<GenerationRequest> all = c.reaching;
    all.insert(all.end(), c.sampled.begin(), c.sampled.end());
    std::vector<std::vector<TokenId>> expected;
    for (const GenerationRequest& r : all) expected.push_back(alone(r));
    auto expect_alone = [&](const std::vector<std::vector<TokenId>>& replies, const char* how) {
        ASSERT_EQ(replies.size(), expected.size());
        for (size_t i = 0; i < replies.size(); ++i) EXPECT_EQ(replies[i], expected[i]) << how << ", request " << i;
    };

    TempDir dir("nemotron-h-record");
    {
        auto record = open_record(dir.path(), false);
        Engine engine(backend, CostCurve::flat(64), EngineOptions{}, nullptr, record.get());
        testing::run_together(engine, c.detours);
        expect_alone(testing::run_together(engine, all), "recording, copies of the detours rejected");
        const DraftCounters t = engine.totals();  // a copy: totals() goes on counting
        EXPECT_GT(t.copy_drafted, t.copy_landed) << "copies " << t.copy_landed << "/" << t.copy_drafted;
        expect_alone(testing::run_together(engine, all), "the same requests again: copies and prompt-cache hits");
        EXPECT_GT(engine.totals().copy_landed, t.copy_landed);
    }
    {
        auto record = open_record(dir.path(), true);
        Engine engine(backend, CostCurve::flat(64), EngineOptions{}, nullptr, record.get());
        expect_alone(testing::run_together(engine, all), "read-only record");
        EXPECT_GT(engine.totals().copy_landed, 0);
    }
    {
        auto record = open_record(dir.path(), true);
        EngineOptions grafted;
        grafted.lanes.grafted = true;
        Engine engine(backend, CostCurve::flat(64), grafted, nullptr, record.get());
        expect_alone(testing::run_together(engine, all), "grafted lanes");
    }
}

}  // namespace
}  // namespace tf::engine
