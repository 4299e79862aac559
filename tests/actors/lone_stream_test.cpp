// The lone-stream driver (actors/gpu_lane.cpp): a stream alone on the lane
// lends itself and the lane runs its rounds back to back. It must give the
// tokens the round path gives, ask the record as the stream actor would,
// hand the stream back when a second one arrives, and end cleanly on cancel.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "../engine/engine_fixture.h"
#include "actor_test_support.h"
#include "actors/actor_service.h"

namespace tf::actors {
namespace {

using namespace engine::testing;
using testing::Reply;


ActorServiceOptions options(recall::Record* record, bool lone_driver) {
    ActorServiceOptions o;
    o.backend = &tinycode();
    o.record = record;
    o.cost = engine::CostCurve::flat(64);
    o.reader_threads = 1;
    o.disk_check_interval = std::chrono::milliseconds(0);
    o.lone_driver = lone_driver;
    return o;
}

std::vector<engine::GenerationRequest> requests() {
    std::vector<engine::GenerationRequest> out;
    std::mt19937 rng(11);
    for (int i = 0; i < 6; ++i) {
        std::vector<model::TokenId> prompt;
        for (int j = 0; j < 12 + i; ++j) prompt.push_back(static_cast<model::TokenId>(rng() % 8000));
        out.push_back(make_request(prompt, i % 2 ? 0.8f : 0.0f, i % 3 ? 0.9f : 1.0f, rng(), 48));
    }
    return out;
}

std::vector<model::TokenId> reference(const engine::GenerationRequest& request) {
    engine::Engine engine(tinycode(), engine::CostCurve::flat(64), plain_options());
    return engine.generate(request).tokens;
}

std::vector<model::TokenId> run(Service& service, const engine::GenerationRequest& request) {
    Reply reply;
    service.submit(request, reply.callback());
    return reply.wait();
}

// Waits until the lane has run `rounds` lone rounds (the driver took the stream).
bool wait_for_lone_rounds(Service& service, int64_t rounds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
        if (service.metrics().lone_rounds_total >= rounds) return true;
    }
    return false;
}

TEST(LoneStream, RunsOnTheLaneWithTheTokensOfTheRoundPathAndAsksTheRecord) {
    const auto cases = requests();
    std::vector<std::vector<model::TokenId>> expected;
    for (const auto& r : cases) expected.push_back(reference(r));
    for (const bool lone : {false, true}) {
        SCOPED_TRACE(lone ? "lone driver on" : "lone driver off");
        TempDir dir(lone ? "lone-on" : "lone-off");
        auto record = open_record(dir.path(), false);
        auto service = start_actor_service(options(record.get(), lone));
        for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(run(*service, cases[i]), expected[i]) << "request " << i;
        // The writer adds a reply after it went out: a regenerated request
        // finds it once the record has taken all six adds.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (service->recall_report().stats.adds < cases.size() && std::chrono::steady_clock::now() < deadline) {
        }
        for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(run(*service, cases[i]), expected[i]) << "again " << i;
        const ServiceMetrics m = service->metrics();
        const RecallReport report = service->recall_report();
        EXPECT_GT(report.stats.landing.tokens_landed, 0u) << "regenerated requests land record copies";
        if (lone) {
            EXPECT_GT(m.lone_rounds_total, m.rounds_total / 2) << "lone requests should run on the lane";
        } else {
            EXPECT_EQ(m.lone_rounds_total, 0);
        }
        service->shutdown();
    }
}

TEST(LoneStream, ASecondStreamTakesItBackToSharedRounds) {
    engine::GenerationRequest first = requests()[0];
    first.max_tokens = 400;
    first.stop_tokens.clear();
    const engine::GenerationRequest second = requests()[1];
    const auto first_expected = reference(first), second_expected = reference(second);

    auto service = start_actor_service(options(nullptr, true));
    Reply a, b;
    service->submit(first, a.callback());
    ASSERT_TRUE(wait_for_lone_rounds(*service, 3)) << "the first stream never ran on the lane";
    service->submit(second, b.callback());
    EXPECT_EQ(b.wait(), second_expected);
    EXPECT_EQ(a.wait(), first_expected);
    const ServiceMetrics m = service->metrics();
    EXPECT_EQ(m.requests_running, 0);
    EXPECT_EQ(m.generation_tokens_total, static_cast<int64_t>(first_expected.size() + second_expected.size()));
}

TEST(LoneStream, ACancelReachesALentStreamAndFreesItsSlot) {
    engine::GenerationRequest endless = requests()[2];
    endless.max_tokens = 4000;
    endless.stop_tokens.clear();
    const engine::GenerationRequest next = requests()[3];
    const auto next_expected = reference(next);  // before the service: they share the backend
    auto service = start_actor_service(options(nullptr, true));
    Reply reply;
    const RequestHandle handle = service->submit(endless, reply.callback());
    ASSERT_TRUE(wait_for_lone_rounds(*service, 3));
    service->cancel(handle);
    reply.wait();
    EXPECT_EQ(reply.finish(), engine::FinishReason::cancelled);
    EXPECT_EQ(service->metrics().requests_running, 0);
    EXPECT_EQ(run(*service, next), next_expected);
}

}  // namespace
}  // namespace tf::actors
