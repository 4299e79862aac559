// The Router over the real actor service and CPU backend on tinycode, in
// this process, for what the binary's flags cannot reach: a full server
// (503 with Retry-After) and a client that goes away mid-stream (its request
// is cancelled).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <future>
#include <nlohmann/json.hpp>

#include "actors/actor_service.h"
#include "http/router.h"
#include "http/server.h"
#include "model/cpu_backend.h"
#include "server_process.h"

namespace tf::e2e {
namespace {

using nlohmann::json;

// One stream slot and no queue: a second request while one runs is refused.
class FullServer : public ::testing::Test {
protected:
    void SetUp() override {
        tokenizer_ = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::load(tinycode_dir()));
        backend_ = model::load_cpu_backend(tinycode_dir(), 2);
        actors::ActorServiceOptions options;
        options.backend = backend_.get();
        options.tokenizer = tokenizer_.get();
        options.engine.max_streams = 1;
        options.engine.ctx_size = 1024;
        options.max_waiting = 0;
        service_ = actors::start_actor_service(options);
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
        server_->stop();
        server_->wait();
        service_->shutdown();
    }

    // A long reply: it is still running when the next request comes.
    std::string long_request(bool stream, int max_tokens = 900) const {
        return json{{"model", "tinycode"}, {"prompt", "def main():\n"}, {"max_tokens", max_tokens}, {"temperature", 1.0},
                    {"seed", 3}, {"stream", stream}}
            .dump();
    }

    bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            if (condition()) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        return condition();
    }

    std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
    std::unique_ptr<model::Backend> backend_;
    std::unique_ptr<actors::Service> service_;
    std::unique_ptr<http::Router> router_;
    std::unique_ptr<http::Server> server_;
};

TEST_F(FullServer, ARequestBeyondCapacityIs503WithRetryAfter) {
    auto first = std::async(std::launch::async, [&] { return http_request(server_->port(), "POST", "/v1/completions", long_request(false, 64)); });
    ASSERT_TRUE(wait_until([&] { return service_->metrics().requests_running == 1; }, std::chrono::seconds(10)));
    const Response refused = http_request(server_->port(), "POST", "/v1/completions", long_request(false));
    const Response first_answer = first.get();
    EXPECT_EQ(refused.status, 503) << refused.body;
    EXPECT_EQ(refused.headers.at("retry-after"), "2");
    const json error = json::parse(refused.body)["error"];
    EXPECT_EQ(error["code"], 503);
    EXPECT_EQ(error["type"], "overloaded_error");
    EXPECT_EQ(first_answer.status, 200);
}

TEST_F(FullServer, AClientThatGoesAwayMidStreamCancelsItsRequest) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(server_->port());
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    const std::string body = long_request(true);
    const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    ASSERT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    char buffer[4096];
    std::string received;
    while (received.find("\"text\"") == std::string::npos) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        ASSERT_GT(n, 0);
        received.append(buffer, static_cast<size_t>(n));
    }
    ASSERT_EQ(service_->metrics().requests_running, 1);
    const int64_t generated_before_close = service_->metrics().generation_tokens_total;
    ::close(fd);
    // Cancelled at its next round, long before 900 tokens (over a second on 2 cores).
    EXPECT_TRUE(wait_until([&] { return service_->metrics().requests_running == 0; }, std::chrono::milliseconds(500)));
    const int64_t generated = service_->metrics().generation_tokens_total - generated_before_close;
    EXPECT_LT(generated, 600) << "the request ran on after its client left";
    // The slot is free again: a new request is served.
    const Response next = http_request(server_->port(), "POST", "/v1/completions",
                                       json{{"model", "tinycode"}, {"prompt", "x = "}, {"max_tokens", 4}}.dump());
    EXPECT_EQ(next.status, 200) << next.body;
}

}  // namespace
}  // namespace tf::e2e
