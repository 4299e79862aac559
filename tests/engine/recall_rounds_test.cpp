// A request decoded again (same prompt, same seed) finds its earlier reply in
// the record and finishes in far fewer rounds, because whole stretches of it
// are copied and verified at once (docs/recall.md, introduction and "Offer policy").
#include <gtest/gtest.h>

#include "engine_fixture.h"

namespace tf::engine {
namespace {

using namespace testing;

GenerationRequest regenerated_request() {
    std::vector<TokenId> prompt;
    for (int i = 0; i < 40; ++i) prompt.push_back((i * 977 + 13) % 8000);
    GenerationRequest r = make_request(prompt, 0.8f, 1.0f, 4242, 128);
    r.stop_tokens.clear();  // the whole 128 tokens, whatever they are
    return r;
}

TEST(RecallRounds, ARegeneratedRequestTakesFarFewerRoundsWithRecallOn) {
    const GenerationRequest request = regenerated_request();
    Completion without;
    int64_t rounds_off = 0;
    {
        // One engine per backend at a time: engines number their KV streams from 0.
        Engine off(tinycode(), CostCurve::flat(64), EngineOptions{});
        off.generate(request);
        const int64_t rounds_before = off.total_rounds();
        without = off.generate(request);  // the prompt cache holds the prompt; no record
        rounds_off = off.total_rounds() - rounds_before;
    }

    TempDir dir("rounds");
    auto record = open_record(dir.path(), false);
    {
        Engine first(tinycode(), CostCurve::flat(64), EngineOptions{}, nullptr, record.get());
        first.generate(request);
    }
    Engine on(tinycode(), CostCurve::flat(64), EngineOptions{}, nullptr, record.get());
    Completion with = on.generate(request);
    const int64_t rounds_on = on.total_rounds();

    EXPECT_EQ(with.tokens, without.tokens);
    EXPECT_EQ(with.tokens.size(), 128u);
    EXPECT_GT(with.counters.copy_landed, 64);
    EXPECT_LT(rounds_on * 3, rounds_off) << "recall on: " << rounds_on << " rounds, off: " << rounds_off;
}

TEST(RecallRounds, ReadOnlyAddsNothingAndStillCopies) {
    const GenerationRequest request = regenerated_request();
    TempDir dir("read-only-rounds");
    {
        auto writer = open_record(dir.path(), false);
        Engine first(tinycode(), CostCurve::flat(64), EngineOptions{}, nullptr, writer.get());
        first.generate(request);
        EXPECT_GT(writer->stats().token_ids, 128u);
    }
    auto reader = open_record(dir.path(), true);
    const uint64_t ids = reader->stats().ids;
    Engine on(tinycode(), CostCurve::flat(64), EngineOptions{}, nullptr, reader.get());
    Completion with = on.generate(request);
    EXPECT_GT(with.counters.copy_landed, 64);
    EXPECT_EQ(reader->stats().ids, ids);
}

}  // namespace
}  // namespace tf::engine
