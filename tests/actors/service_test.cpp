// The actor system through its Service, on real threads with the real
// tinycode model: identity under concurrency, cancellation, recall routes.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "../engine/engine_fixture.h"
#include "actor_test_support.h"
#include "actors/actor_service.h"

namespace tf::actors {
namespace {

using namespace engine::testing;
using testing::Reply;


ActorServiceOptions service_options(recall::Record* record) {
    ActorServiceOptions o;
    o.backend = &tinycode();
    o.record = record;
    o.cost = engine::CostCurve::flat(64);
    o.reader_threads = 2;
    o.disk_check_interval = std::chrono::milliseconds(0);
    return o;
}

std::vector<engine::GenerationRequest> sixteen_requests() {
    std::vector<engine::GenerationRequest> requests;
    std::mt19937 rng(7);
    for (int i = 0; i < 16; ++i) {
        std::vector<model::TokenId> prompt;
        const int n = 10 + static_cast<int>(rng() % 30);
        for (int j = 0; j < n; ++j) prompt.push_back(static_cast<model::TokenId>(rng() % 8000));
        requests.push_back(make_request(prompt, i % 3 == 0 ? 0.0f : 0.8f, i % 2 ? 1.0f : 0.9f, rng(), 24));
    }
    return requests;
}

// The same requests without stop tokens, for tests that count tokens: on
// some SIMD paths (f32 activations) a greedy reply meets an eos id early.
std::vector<engine::GenerationRequest> sixteen_full_length_requests() {
    std::vector<engine::GenerationRequest> requests = sixteen_requests();
    for (auto& r : requests) r.stop_tokens.clear();
    return requests;
}

std::vector<std::vector<model::TokenId>> alone(const std::vector<engine::GenerationRequest>& requests) {
    std::vector<std::vector<model::TokenId>> replies;
    for (const auto& r : requests) {
        engine::Engine engine(tinycode(), engine::CostCurve::flat(64), plain_options());
        replies.push_back(engine.generate(r).tokens);
    }
    return replies;
}

std::vector<std::vector<model::TokenId>> concurrently(Service& service,
                                                      const std::vector<engine::GenerationRequest>& requests) {
    std::vector<std::unique_ptr<Reply>> replies;
    for (const auto& r : requests) {
        replies.push_back(std::make_unique<Reply>());
        service.submit(r, replies.back()->callback());
    }
    std::vector<std::vector<model::TokenId>> tokens;
    for (auto& reply : replies) tokens.push_back(reply->wait());
    return tokens;
}

TEST(ActorService, SixteenConcurrentStreamsMatchEachStreamAloneWithRecallOffOnAndReadOnly) {
    // DESIGN.md 1: "the same token sequence with Recall off, on, or read-only,
    // for the same request and seed, whatever else the server is serving".
    const auto requests = sixteen_requests();
    const auto expected = alone(requests);
    {
        auto service = start_actor_service(service_options(nullptr));
        EXPECT_EQ(concurrently(*service, requests), expected) << "recall off";
    }
    TempDir dir("actors-identity");
    {
        auto record = open_record(dir.path(), false);
        auto service = start_actor_service(service_options(record.get()));
        EXPECT_EQ(concurrently(*service, requests), expected) << "recall on, first time";
        EXPECT_EQ(concurrently(*service, requests), expected) << "recall on, regenerated";
        RecallReport report = service->recall_report();
        EXPECT_TRUE(report.enabled);
        EXPECT_GT(report.stats.landing.copies_offered, 0u) << "regenerated requests copy from the record";
        service->shutdown();
    }
    {
        auto record = open_record(dir.path(), true);
        auto service = start_actor_service(service_options(record.get()));
        EXPECT_EQ(concurrently(*service, requests), expected) << "recall read-only";
        EXPECT_EQ(service->recall_report().stats.state, recall::RecallState::read_only);
    }
}

TEST(ActorService, CancelEndsAStreamAndServingGoesOn) {
    auto service = start_actor_service(service_options(nullptr));
    engine::GenerationRequest long_request = sixteen_requests()[1];
    long_request.max_tokens = 2000;
    long_request.stop_tokens.clear();
    Reply cancelled;
    const RequestHandle handle = service->submit(long_request, cancelled.callback());
    // Cancel a stream that is running (not one still waiting to be opened):
    // its first event says it is. 2000 tokens take far longer than one round,
    // so it is still running when the cancel arrives.
    ASSERT_TRUE(cancelled.wait_for_first_event()) << "no event from the long request within 120 s";
    service->cancel(handle);
    cancelled.wait();
    EXPECT_EQ(cancelled.finish(), engine::FinishReason::cancelled);
    Reply next;
    service->submit(sixteen_full_length_requests()[2], next.callback());
    EXPECT_EQ(next.wait().size(), 24u);
    ServiceMetrics metrics = service->metrics();
    EXPECT_EQ(metrics.requests_running, 0);
    EXPECT_EQ(metrics.requests_total, 2);
}

TEST(ActorService, ConcurrentStreamsShareRounds) {
    // "a round is one batched forward over the rows of every ready stream"
    auto service = start_actor_service(service_options(nullptr));
    const auto requests = sixteen_full_length_requests();  // 24 tokens each
    auto replies = concurrently(*service, requests);
    for (const auto& reply : replies) EXPECT_EQ(reply.size(), 24u);
    ServiceMetrics m = service->metrics();
    EXPECT_EQ(m.requests_total, 16);
    EXPECT_EQ(m.requests_running, 0);
    EXPECT_EQ(m.generation_tokens_total, 16 * 24);
    // One stream alone needs about 24 rounds; sixteen taking turns would need 384.
    EXPECT_LE(m.rounds_total, 40) << "streams did not share rounds";
}

TEST(ActorService, AStreamActorThatFailsDoesNotTakeTheLaneDown) {
    auto service = start_actor_service(service_options(nullptr));
    // This request's consumer throws on its first event: its stream actor dies.
    engine::GenerationRequest doomed = sixteen_requests()[3];
    doomed.max_tokens = 200;
    doomed.stop_tokens.clear();
    service->submit(doomed, [](StreamEvent) { throw std::runtime_error("consumer failed"); });
    Reply other;
    service->submit(sixteen_requests()[4], other.callback());
    EXPECT_EQ(other.wait().size(), 24u);
    // The lane frees the failed stream's slot when its down message arrives,
    // at no point the test can wait on directly: poll the gauge itself until
    // it reads 0 (the deadline only turns a slot that is never freed into a
    // failure).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (service->metrics().requests_running > 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(service->metrics().requests_running, 0) << "the failed stream's slot and KV are released";
    Reply after;
    service->submit(sixteen_requests()[5], after.callback());
    EXPECT_EQ(after.wait().size(), 24u);
}

TEST(ActorService, BadRequestsAreRefusedAtSubmit) {
    auto service = start_actor_service(service_options(nullptr));
    engine::GenerationRequest r = sixteen_requests()[0];
    r.prompt.push_back(100000);
    Reply reply;
    EXPECT_THROW(service->submit(r, reply.callback()), std::invalid_argument);
}

TEST(ActorService, DeleteIsRefusedWhenRecallIsOff) {
    auto service = start_actor_service(service_options(nullptr));
    EXPECT_FALSE(service->recall_report().enabled);
    EXPECT_EQ(service->delete_recall().outcome, recall::EraseResult::Outcome::refused);
}

}  // namespace
}  // namespace tf::actors
