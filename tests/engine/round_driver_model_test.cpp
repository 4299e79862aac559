// RoundDriver on tinycode: one stream driven through it by hand, drafting
// from its own context and from a record that holds its earlier reply,
// lands exactly the tokens plain decoding gives (the identity guarantee, at
// the level of the one piece every server path shares).
#include <gtest/gtest.h>

#include "engine/round_driver.h"
#include "engine_fixture.h"

namespace tf::engine {
namespace {

using namespace testing;

GenerationRequest regenerated_request() {
    std::vector<TokenId> prompt;
    for (int i = 0; i < 30; ++i) prompt.push_back((i * 613 + 29) % 8000);
    GenerationRequest r = make_request(prompt, 0.7f, 0.9f, 777, 64);
    r.stop_tokens.clear();  // all 64 tokens, so the copies have room to land
    return r;
}

TEST(RoundDriverOnTinycode, DraftedRoundsLandThePlainTokens) {
    const GenerationRequest request = regenerated_request();
    std::vector<TokenId> plain;
    TempDir dir("round-driver");
    auto record = open_record(dir.path(), false);
    // One engine at a time: engines number their caches from 0 and close them when they go.
    plain = Engine(tinycode(), CostCurve::flat(64), plain_options()).generate(request).tokens;
    Engine(tinycode(), CostCurve::flat(64), EngineOptions{}, nullptr, record.get()).generate(request);

    const Drafter drafter(CostCurve::flat(64), DrafterOptions{}, record.get());
    const DrivenReply driven = drive(request, &drafter);
    EXPECT_EQ(driven.tokens, plain);
    EXPECT_GT(driven.counters.copies_offered, 0);
    EXPECT_GT(driven.counters.copy_landed, 32) << "the record holds this very reply";
    EXPECT_LT(driven.rounds, 20);
}

}  // namespace
}  // namespace tf::engine
