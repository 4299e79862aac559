// The Router over the real actor service and CPU backend on tinycode, in
// this process, for what the binary's flags cannot reach: a full server
// (503 with Retry-After) and a client that goes away mid-stream (its request
// is cancelled).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>

#include "actors/actor_service.h"
#include "cpu/cpu_backend.h"
#include "http/router.h"
#include "http/server.h"
#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;

// How long a test waits for an event before it fails; generous, because on a
// loaded machine (ctest -j on two busy cores) everything comes late.
constexpr std::chrono::seconds kDeadline{60};

// What the test, the service wrapper and the backend wrapper below share:
// one mutex and one condition variable, so the test can wait on any mix of
// the events they report.
struct Gate {
    std::mutex mutex;
    std::condition_variable changed;
    // GatedService: the watched request.
    bool watch_next = false;      // the next request submitted is the watched one
    bool hold_at_text = false;    // its stream waits in its first text event until `open`
    bool arm_at_text = false;     // its first text event arms the backend gate
    bool first_text = false;      // its first event with text has been passed on
    bool held = false;            // its stream is waiting in that event
    std::optional<engine::FinishReason> finish;  // its last event came
    int cancels = 0;              // cancel() calls passed on to the actor service
    // GatedBackend: forwards, once armed.
    bool armed = false;
    int permits = 0;              // forwards the test lets through
    bool lane_waiting = false;    // a forward waits for a permit
    // Everything passes, for good (end of test, or a test that failed).
    bool open = false;

    // Waits (kDeadline at most) for `condition`, evaluated under the lock.
    bool wait(const std::function<bool()>& condition) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, kDeadline, condition);
    }
    void update(const std::function<void()>& change) {
        std::lock_guard lock(mutex);
        change();
        changed.notify_all();
    }
};

// The real actor service, watching one request for the test: its first
// event with text (optionally held there, on the actor thread that delivers
// it, or arming the backend gate), its last event, and every cancel().
class GatedService : public actors::Service {
public:
    GatedService(std::unique_ptr<actors::Service> inner, Gate& gate) : inner_(std::move(inner)), gate_(gate) {}

    actors::RequestHandle submit(engine::GenerationRequest request, actors::EventCallback on_event) override {
        {
            std::lock_guard lock(gate_.mutex);
            if (!gate_.watch_next) return inner_->submit(std::move(request), std::move(on_event));
            gate_.watch_next = false;
        }
        // One request's events come one at a time, so `seen_text` needs no lock.
        auto forward = std::make_shared<actors::EventCallback>(std::move(on_event));
        auto seen_text = std::make_shared<bool>(false);
        return inner_->submit(std::move(request), [this, forward, seen_text](actors::StreamEvent event) {
            const engine::FinishReason finish = event.finish;
            const bool first_text = !*seen_text && finish == engine::FinishReason::running && !event.text.empty();
            (*forward)(std::move(event));
            if (finish != engine::FinishReason::running) gate_.update([&] { gate_.finish = finish; });
            if (!first_text) return;
            *seen_text = true;
            std::unique_lock lock(gate_.mutex);
            gate_.first_text = true;
            if (gate_.arm_at_text) gate_.armed = true;
            gate_.held = gate_.hold_at_text;
            gate_.changed.notify_all();
            if (gate_.hold_at_text) gate_.changed.wait_for(lock, kDeadline, [&] { return gate_.open; });
            gate_.held = false;
        });
    }
    void cancel(actors::RequestHandle request) override {
        inner_->cancel(request);  // counted once it has been passed on
        gate_.update([&] { ++gate_.cancels; });
    }
    actors::RecallReport recall_report() override { return inner_->recall_report(); }
    recall::EraseResult delete_recall() override { return inner_->delete_recall(); }
    actors::ServiceMetrics metrics() override { return inner_->metrics(); }
    void shutdown() override { inner_->shutdown(); }

private:
    std::unique_ptr<actors::Service> inner_;
    Gate& gate_;
};

// The real backend; once the gate is armed, each forward waits for a permit
// from the test. The lane runs every forward, whether the stream actor
// drives the rounds or the lane drives a lone stream itself, so a request
// held here makes no progress at all until the test lets it.
class GatedBackend : public model::Backend {
public:
    GatedBackend(model::Backend& inner, Gate& gate) : inner_(inner), gate_(gate) {}

    const model::ModelConfig& config() const override { return inner_.config(); }
    void open_stream(model::StreamId stream, int32_t capacity) override { inner_.open_stream(stream, capacity); }
    void close_stream(model::StreamId stream) override { inner_.close_stream(stream); }
    int32_t stream_length(model::StreamId stream) const override { return inner_.stream_length(stream); }
    void truncate(model::StreamId stream, int32_t length) override { inner_.truncate(stream, length); }
    void copy_prefix(model::StreamId from, model::StreamId to, int32_t length) override {
        inner_.copy_prefix(from, to, length);
    }
    void forward(std::span<const model::Row> rows, std::span<const model::SamplingParams> samplers,
                 model::RowOutputs& out) override {
        {
            std::unique_lock lock(gate_.mutex);
            if (gate_.armed && !gate_.open) {
                gate_.lane_waiting = true;
                gate_.changed.notify_all();
                gate_.changed.wait_for(lock, kDeadline, [&] { return gate_.permits > 0 || gate_.open; });
                if (gate_.permits > 0) --gate_.permits;
                gate_.lane_waiting = false;
                gate_.changed.notify_all();
            }
        }
        inner_.forward(rows, samplers, out);
    }

private:
    model::Backend& inner_;
    Gate& gate_;
};

// One stream slot and no queue: a second request while one runs is refused.
class FullServer : public ::testing::Test {
protected:
    void SetUp() override {
        tokenizer_ = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::load(tinycode_dir()));
        backend_ = cpu::load_cpu_backend(tinycode_dir(), 2);
        gated_backend_ = std::make_unique<GatedBackend>(*backend_, gate_);
        actors::ActorServiceOptions options;
        options.backend = gated_backend_.get();
        options.tokenizer = tokenizer_.get();
        options.engine.max_streams = 1;
        options.engine.ctx_size = 1024;
        options.max_waiting = 0;
        service_ = std::make_unique<GatedService>(actors::start_actor_service(options), gate_);
        http::RouterOptions router_options;
        router_options.served_model_name = "tinycode";
        router_options.ctx_size = 1024;
        router_options.vocab_size = 8192;
        router_options.eos_token_ids = backend_->config().eos_token_ids;
        router_options.retry_after_seconds = 2;
        router_ = std::make_unique<http::Router>(*service_, *tokenizer_, router_options);
        http::ServerOptions server_options;
        server_options.port = 0;
        server_ = std::make_unique<http::Server>(server_options, [this](http::HttpRequest r, std::shared_ptr<http::Responder> w) {
            router_->handle(std::move(r), std::move(w));
        });
        server_->start();
    }
    void TearDown() override {
        open_gate();  // a test that failed early may have left its request held
        server_->stop();
        server_->wait();
        service_->shutdown();
    }

    void open_gate() {
        gate_.update([&] { gate_.open = true; });
    }

    // A long reply: it is still running when the next request comes.
    std::string long_request(bool stream, int max_tokens = 900) const {
        return json{{"model", "tinycode"}, {"prompt", "def main():\n"}, {"max_tokens", max_tokens}, {"temperature", 1.0},
                    {"seed", 3}, {"stream", stream}}
            .dump();
    }

    Gate gate_;
    std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
    std::unique_ptr<model::Backend> backend_;
    std::unique_ptr<GatedBackend> gated_backend_;
    std::unique_ptr<GatedService> service_;
    std::unique_ptr<http::Router> router_;
    std::unique_ptr<http::Server> server_;
};

TEST_F(FullServer, ARequestBeyondCapacityIs503WithRetryAfter) {
    // The first request waits in its first text event, holding the only
    // slot, until the refused one has its answer: it cannot finish first
    // however slow the machine. (Its last event, which frees the slot, comes
    // after that one.)
    gate_.update([&] {
        gate_.watch_next = true;
        gate_.hold_at_text = true;
    });
    auto first = std::async(std::launch::async, [&] {
        return http_request(server_->port(), "POST", "/v1/completions", long_request(false, 64));
    });
    const bool running = gate_.wait([&] { return gate_.held; });
    const Response refused =
        running ? http_request(server_->port(), "POST", "/v1/completions", long_request(false)) : Response{};
    open_gate();
    const Response first_answer = first.get();
    ASSERT_TRUE(running) << "the first request had no text within " << kDeadline.count() << " s";
    EXPECT_EQ(refused.status, 503) << refused.body;
    EXPECT_EQ(refused.headers.at("retry-after"), "2");
    const json error = json::parse(refused.body)["error"];
    EXPECT_EQ(error["code"], 503);
    EXPECT_EQ(error["type"], "overloaded_error");
    EXPECT_EQ(first_answer.status, 200);
}

TEST_F(FullServer, AClientThatGoesAwayMidStreamCancelsItsRequest) {
    // Once the streamed request has sent text, its next forward waits at the
    // backend gate: the request is provably running, and makes no progress,
    // while the client goes and the router cancels. Then the test lets one
    // forward through at a time until the request ends, so it cannot run on
    // to its 900 tokens while the cancel travels (stream actor, then lane).
    gate_.update([&] {
        gate_.watch_next = true;
        gate_.arm_at_text = true;
    });
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(server_->port());
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    timeval timeout{static_cast<time_t>(kDeadline.count()), 0};  // a read that hangs fails instead
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    const std::string body = long_request(true);
    const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    ASSERT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    char buffer[4096];
    std::string received;
    while (received.find("\"text\"") == std::string::npos) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        ASSERT_GT(n, 0) << "no streamed text within " << kDeadline.count() << " s: " << received;
        received.append(buffer, static_cast<size_t>(n));
    }
    // (The lane is blocked in a forward from here on: no metrics() calls,
    // they are answered by the lane.)
    ASSERT_TRUE(gate_.wait([&] { return gate_.lane_waiting; })) << "the request's next forward never came";
    ::close(fd);
    // The server notices the client has gone and the router cancels.
    ASSERT_TRUE(gate_.wait([&] { return gate_.cancels >= 1; }))
        << "no cancel within " << kDeadline.count() << " s of the client leaving";
    int forwards = 0;
    bool ended = false;
    for (; forwards < 200; ++forwards) {
        ended = gate_.wait([&] { return gate_.finish.has_value() || (gate_.lane_waiting && gate_.permits == 0); }) &&
                gate_.finish.has_value();
        if (ended) break;
        gate_.update([&] { ++gate_.permits; });
    }
    open_gate();
    ASSERT_TRUE(ended) << "the request did not end within " << forwards << " forwards after its cancel";
    EXPECT_EQ(gate_.finish, engine::FinishReason::cancelled) << "after " << forwards << " forwards";
    // The stream released its slot before its last event (both go to the lane, in order).
    const actors::ServiceMetrics metrics = service_->metrics();
    EXPECT_EQ(metrics.requests_running, 0);
    EXPECT_LT(metrics.generation_tokens_total, 600) << "the request ran on after its client left";
    // The slot is free again: a new request is served.
    const Response next = http_request(server_->port(), "POST", "/v1/completions",
                                       json{{"model", "tinycode"}, {"prompt", "x = "}, {"max_tokens", 4}}.dump());
    EXPECT_EQ(next.status, 200) << next.body;
}

}  // namespace
}  // namespace tf::e2e
