// The Beast server on a real loopback port, driven by real clients (curl and
// a raw socket): keep-alive, chunked SSE, limits, malformed requests,
// disconnects and a graceful stop.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <mutex>
#include <thread>

#include "http/server.h"
#include "tests/support/run_command.h"

namespace tf::http {
namespace {

std::string run(const std::string& command) { return test_support::run_command(command).output; }

// A raw TCP client for what curl hides.
class RawClient {
public:
    explicit RawClient(uint16_t port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
        // A server that never answers fails the test instead of hanging it.
        timeval timeout{10, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    }
    ~RawClient() { close(); }
    bool connected() const { return connected_; }
    void send(const std::string& data) { (void)::write(fd_, data.data(), data.size()); }
    // Reads until `needle` appears or the peer closes.
    std::string read_until(const std::string& needle) {
        std::array<char, 4096> buffer{};
        while (received_.find(needle) == std::string::npos) {
            const ssize_t n = ::read(fd_, buffer.data(), buffer.size());
            if (n <= 0) break;
            received_.append(buffer.data(), static_cast<size_t>(n));
        }
        return received_;
    }
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_ = -1;
    bool connected_ = false;
    std::string received_;
};

class ServerTest : public ::testing::Test {
protected:
    void start(Handler handler, ServerOptions options = {}) {
        options.port = 0;
        server_ = std::make_unique<Server>(options, std::move(handler));
        server_->start();
        base_ = "http://127.0.0.1:" + std::to_string(server_->port());
    }
    void TearDown() override {
        if (server_) {
            server_->stop(std::chrono::milliseconds(500));
            server_->wait();
        }
    }

    std::unique_ptr<Server> server_;
    std::string base_;
};

Handler echo_handler() {
    return [](HttpRequest request, std::shared_ptr<Responder> responder) {
        responder->respond(200, "text/plain", request.method + " " + request.path + " ?" + request.query + " [" +
                                                  request.authorization + "] " + request.body);
    };
}

TEST_F(ServerTest, AnswersAPlainRequest) {
    start(echo_handler());
    std::string out = run("curl -s -X POST -H 'Authorization: Bearer k' --data 'hello' '" + base_ + "/v1/x?a=1'");
    EXPECT_EQ(out, "POST /v1/x ?a=1 [Bearer k] hello");
}

TEST_F(ServerTest, KeepsTheConnectionAliveBetweenRequests) {
    start(echo_handler());
    RawClient client(server_->port());
    ASSERT_TRUE(client.connected());
    client.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n");
    client.read_until("GET /one");
    client.send("GET /two HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string both = client.read_until("GET /two");
    EXPECT_NE(both.find("GET /two"), std::string::npos);
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
    start(echo_handler());
    RawClient client(server_->port());
    client.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string both = client.read_until("GET /b");
    EXPECT_LT(both.find("GET /a"), both.find("GET /b"));
}

TEST_F(ServerTest, Expect100ContinueGetsAnInterimAnswerBeforeTheBody) {
    // A client that asks "Expect: 100-continue" sends its body only after
    // "HTTP/1.1 100 Continue" (or after its own timeout: a second for curl).
    start(echo_handler());
    RawClient client(server_->port());
    client.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    const std::string interim = client.read_until("\r\n\r\n");
    EXPECT_EQ(interim.rfind("HTTP/1.1 100 Continue\r\n", 0), 0u) << interim;
    client.send("hello");
    EXPECT_NE(client.read_until("POST /e ? [] hello").find("200 OK"), std::string::npos);
}

TEST_F(ServerTest, CurlWithExpect100ContinueDoesNotWaitForItsTimeout) {
    start(echo_handler());
    const auto started = std::chrono::steady_clock::now();
    std::string out = run("curl -s --expect100-timeout 5 -H 'Expect: 100-continue' --data 'hello' '" + base_ + "/c'");
    const auto took = std::chrono::steady_clock::now() - started;
    EXPECT_EQ(out, "POST /c ? [] hello");
    EXPECT_LT(took, std::chrono::seconds(2)) << "curl waited for its 5 s timeout: no 100 Continue";
}

TEST_F(ServerTest, AnswersFromAnotherThreadLater) {
    start([](HttpRequest, std::shared_ptr<Responder> responder) {
        std::thread([responder] {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            responder->respond(201, "application/json", "{\"later\":true}", {{"X-Test", "yes"}});
        }).detach();
    });
    std::string out = run("curl -s -i '" + base_ + "/'");
    EXPECT_NE(out.find("201"), std::string::npos);
    EXPECT_NE(out.find("X-Test: yes"), std::string::npos);
    EXPECT_NE(out.find("{\"later\":true}"), std::string::npos);
}

TEST_F(ServerTest, StreamsServerSentEventsInChunks) {
    start([](HttpRequest, std::shared_ptr<Responder> responder) {
        std::thread([responder] {
            responder->start_events();
            for (int i = 0; i < 3; ++i) {
                responder->send_event("data: " + std::to_string(i) + "\n\n");
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            responder->send_event("data: [DONE]\n\n");
            responder->end_events();
        }).detach();
    });
    std::string out = run("curl -s -N -i '" + base_ + "/stream'");
    EXPECT_NE(out.find("Content-Type: text/event-stream"), std::string::npos) << out;
    EXPECT_NE(out.find("Transfer-Encoding: chunked"), std::string::npos) << out;
    EXPECT_NE(out.find("data: 0\n\ndata: 1\n\ndata: 2\n\ndata: [DONE]\n\n"), std::string::npos) << out;
}

TEST_F(ServerTest, ABodyOverTheLimitIs413) {
    ServerOptions options;
    options.body_limit = 1000;
    start(echo_handler(), options);
    std::string out = run("head -c 5000 /dev/zero | tr '\\0' 'a' | curl -s -w ' %{http_code}' --data-binary @- '" +
                          base_ + "/'");
    EXPECT_NE(out.find("413"), std::string::npos) << out;
    EXPECT_NE(out.find("request too large"), std::string::npos) << out;
}

TEST_F(ServerTest, AMalformedRequestIs400) {
    start(echo_handler());
    RawClient client(server_->port());
    client.send("THIS IS NOT HTTP\r\n\r\n");
    std::string out = client.read_until("\r\n\r\n{");
    EXPECT_NE(out.find("400"), std::string::npos) << out;
}

TEST_F(ServerTest, AClientThatGoesAwayIsNoticedWhileWaiting) {
    std::promise<void> gone;
    std::shared_ptr<Responder> kept;
    std::mutex mutex;
    start([&](HttpRequest, std::shared_ptr<Responder> responder) {
        std::lock_guard lock(mutex);
        kept = responder;
        responder->on_disconnect([&gone] { gone.set_value(); });
    });
    {
        RawClient client(server_->port());
        client.send("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(gone.get_future().wait_for(std::chrono::seconds(5)), std::future_status::ready);
    std::lock_guard lock(mutex);
    EXPECT_TRUE(kept->disconnected());
    kept->respond(200, "text/plain", "too late");  // harmless
}

TEST_F(ServerTest, AHandlerThatThrowsGets500AndServingGoesOn) {
    start([](HttpRequest request, std::shared_ptr<Responder> responder) {
        if (request.path == "/boom") throw std::runtime_error("boom");
        responder->respond(200, "text/plain", "fine");
    });
    EXPECT_NE(run("curl -s -w ' %{http_code}' '" + base_ + "/boom'").find("500"), std::string::npos);
    EXPECT_EQ(run("curl -s '" + base_ + "/ok'"), "fine");
}

TEST_F(ServerTest, GracefulStopLetsAnAnswerInFlightFinish) {
    std::atomic<bool> answered{false};
    start([&](HttpRequest, std::shared_ptr<Responder> responder) {
        std::thread([responder, &answered] {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            responder->respond(200, "text/plain", "finished");
            answered = true;
        }).detach();
    });
    auto reply = std::async(std::launch::async, [&] { return run("curl -s '" + base_ + "/'"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server_->stop(std::chrono::milliseconds(3000));
    server_->wait();
    EXPECT_EQ(reply.get(), "finished");
    server_.reset();
}

TEST(ServerBind, ABadHostIsAClearError) {
    ServerOptions options;
    options.host = "not-an-ip";
    try {
        Server server(options, echo_handler());
        ADD_FAILURE() << "bound to a bad host";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("--host not-an-ip"), std::string::npos) << error.what();
    }
}

TEST(ServerBind, APortInUseIsAClearError) {
    ServerOptions options;
    options.port = 0;
    Server first(options, echo_handler());
    options.port = first.port();
    try {
        Server second(options, echo_handler());
        ADD_FAILURE() << "bound twice";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("cannot bind 127.0.0.1:" + std::to_string(options.port)),
                  std::string::npos)
            << error.what();
    }
}

}  // namespace
}  // namespace tf::http
