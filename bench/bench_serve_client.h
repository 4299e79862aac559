// bench-serve's HTTP/1.1 client (Boost.Beast, blocking): one keep-alive
// connection per in-flight request, whole answers for GETs and setup
// requests, and streamed answers read piece by piece as they arrive. Plain
// http only. A Connection is used by one thread at a time.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace tf::bench {

struct Url {
    std::string host;
    std::string port;    // "80" when the URL names none
    std::string prefix;  // path before /v1/..., without a trailing slash ("" for none)
};
// "http://HOST[:PORT][/PREFIX]". Throws std::invalid_argument on anything else.
Url parse_url(const std::string& text);

struct HttpAnswer {
    int status = 0;
    std::string body;
};

class Connection {
public:
    Connection(Url url, std::string api_key, std::chrono::milliseconds timeout);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // Opens the socket now (requests open it themselves when needed).
    void connect();

    // A whole answer. `body` empty: GET, else POST with a JSON body. Throws
    // std::runtime_error on transport errors (after one retry on a fresh
    // socket when a kept-alive one turned out closed).
    HttpAnswer request(const std::string& target, const std::string& body = "");

    // POSTs `body` and hands each piece of a 200 answer's body to `on_bytes`
    // as it arrives. `on_sent` runs right before the request is written.
    // Returns the status; a non-200 answer's body comes back whole in `error_body`.
    int stream(const std::string& target, const std::string& body, const std::function<void()>& on_sent,
               const std::function<void(std::string_view)>& on_bytes, std::string& error_body);

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace tf::bench
