// Server: a Boost.Beast HTTP/1.1 server on an Asio thread pool. Each
// connection runs on its own strand; keep-alive, a request body limit,
// header and idle timeouts, chunked streaming for SSE, and a graceful stop.
//
// The handler sees a plain HttpRequest and answers through a Responder,
// possibly later and from another thread (the reply comes when the engine
// has it). Nothing here knows about routes or JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tf::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
    std::string method;         // "GET", "POST", ...
    std::string path;           // target without the query
    std::string query;          // after '?', undecoded
    std::string authorization;  // the Authorization header, if any
    std::string body;
    std::string x_api_key;      // the x-api-key header, if any (Anthropic's clients send the key there)
};

// How a handler answers. Thread-safe: every call is posted to the
// connection's strand. Exactly one of respond() or the start_events() ...
// end_events() sequence per request.
class Responder {
public:
    virtual ~Responder() = default;
    virtual void respond(int status, std::string content_type, std::string body, Headers extra = {}) = 0;
    // A 200 text/event-stream response sent in chunks.
    virtual void start_events(Headers extra = {}) = 0;
    virtual void send_event(std::string data) = 0;
    virtual void end_events() = 0;
    // True once the client has gone: writes failed or the socket closed.
    virtual bool disconnected() const = 0;
    // Called once (on some thread) when the client goes before the answer ends.
    virtual void on_disconnect(std::function<void()> callback) = 0;
};

using Handler = std::function<void(HttpRequest, std::shared_ptr<Responder>)>;

struct ServerOptions {
    std::string host = "127.0.0.1";
    uint16_t port = 8000;  // 0: any free port; see Server::port()
    int threads = 2;
    size_t body_limit = 8u << 20;
    std::chrono::seconds header_timeout{30};  // to receive a whole request
    std::chrono::seconds idle_timeout{75};    // keep-alive connection without a request
};

class Server {
public:
    // Binds and listens; throws std::runtime_error naming host and port on failure.
    Server(ServerOptions options, Handler handler);
    ~Server();

    uint16_t port() const;

    // Runs the thread pool; returns at once.
    void start();
    // Stops accepting, closes idle connections, lets answers in flight finish
    // for up to `grace`, then stops the pool. Safe to call from any thread, once.
    void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));
    // Blocks until the pool has stopped.
    void wait();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tf::http
