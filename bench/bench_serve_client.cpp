#include "bench/bench_serve_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <stdexcept>

namespace tf::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

Url parse_url(const std::string& text) {
    const std::string scheme = "http://";
    if (text.compare(0, scheme.size(), scheme) != 0) {
        throw std::invalid_argument("'" + text + "' is not an http:// URL (https is not supported)");
    }
    std::string rest = text.substr(scheme.size());
    Url url;
    const size_t slash = rest.find('/');
    if (slash != std::string::npos) {
        url.prefix = rest.substr(slash);
        rest.resize(slash);
        while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
        // A URL ending in /v1 names the API root; the routes add /v1 themselves.
        if (url.prefix.size() >= 3 && url.prefix.compare(url.prefix.size() - 3, 3, "/v1") == 0) {
            url.prefix.resize(url.prefix.size() - 3);
        }
    }
    const size_t colon = rest.rfind(':');
    if (colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
        url.host = rest.substr(0, colon);
        url.port = rest.substr(colon + 1);
        if (url.port.empty() || url.port.find_first_not_of("0123456789") != std::string::npos) {
            throw std::invalid_argument("'" + text + "': the port is not a number");
        }
    } else {
        url.host = rest;
        url.port = "80";
    }
    if (url.host.size() > 2 && url.host.front() == '[' && url.host.back() == ']') url.host = url.host.substr(1, url.host.size() - 2);
    if (url.host.empty()) throw std::invalid_argument("'" + text + "' names no host");
    return url;
}

// Every operation runs asynchronously on the connection's own io_context,
// which the calling thread runs until it completes: that is what lets the
// stream's timer bound each wait.
struct Connection::State {
    Url url;
    std::string api_key;
    std::chrono::milliseconds timeout;
    asio::io_context io;
    beast::tcp_stream stream{io};
    beast::flat_buffer buffer;
    bool open = false;

    template <typename Start>
    void run(Start&& start, const char* what) {
        beast::error_code result;
        stream.expires_after(timeout);
        start([&result](beast::error_code ec, auto&&...) { result = ec; });
        io.restart();
        io.run();
        if (result && result != http::error::need_buffer) {
            close();
            throw std::runtime_error(std::string(what) + ": " + result.message());
        }
    }

    void connect() {
        if (open) return;
        asio::ip::tcp::resolver resolver(io);
        beast::error_code ec;
        const auto endpoints = resolver.resolve(url.host, url.port, ec);
        if (ec) throw std::runtime_error("resolving " + url.host + ": " + ec.message());
        buffer.clear();
        run([&](auto handler) { stream.async_connect(endpoints, handler); }, ("connecting to " + url.host + ":" + url.port).c_str());
        stream.socket().set_option(asio::ip::tcp::no_delay(true));
        open = true;
    }

    void close() {
        beast::error_code ignored;
        stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        stream.socket().close(ignored);
        open = false;
    }

    http::request<http::string_body> make(const std::string& target, const std::string& body) const {
        http::request<http::string_body> req(body.empty() ? http::verb::get : http::verb::post, url.prefix + target, 11);
        req.set(http::field::host, url.host + ":" + url.port);
        req.set(http::field::user_agent, "tensorfold-bench-serve");
        req.keep_alive(true);
        if (!body.empty()) req.set(http::field::content_type, "application/json");
        if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
        req.body() = body;
        req.prepare_payload();
        return req;
    }

    // Writes the request and reads the answer's header into a new parser, on
    // a fresh socket once more if a kept-alive one had been closed by the server.
    void send(http::request<http::string_body>& req, std::optional<http::response_parser<http::buffer_body>>& parser,
              const std::function<void()>& on_sent) {
        for (int attempt = 0;; ++attempt) {
            const bool reused = open;
            parser.emplace();
            parser->body_limit(std::uint64_t{1} << 40);  // no real limit (boost::none trips a comparison bug in Boost 1.74)
            try {
                connect();
                if (on_sent) on_sent();
                run([&](auto handler) { http::async_write(stream, req, handler); }, "sending the request");
                run([&](auto handler) { http::async_read_header(stream, buffer, *parser, handler); }, "reading the answer");
                return;
            } catch (const std::runtime_error&) {
                if (!reused || attempt > 0) throw;
            }
        }
    }

    // Reads the body's pieces into `on_bytes` until the answer ends.
    void read_body(http::response_parser<http::buffer_body>& parser, const std::function<void(std::string_view)>& on_bytes) {
        char piece[16384];
        while (!parser.is_done()) {
            parser.get().body().data = piece;
            parser.get().body().size = sizeof piece;
            run([&](auto handler) { http::async_read_some(stream, buffer, parser, handler); }, "reading the answer");
            const size_t got = sizeof piece - parser.get().body().size;
            if (got > 0) on_bytes(std::string_view(piece, got));
        }
        if (!parser.keep_alive()) close();
    }
};

Connection::Connection(Url url, std::string api_key, std::chrono::milliseconds timeout)
    : state_(std::make_unique<State>()) {
    state_->url = std::move(url);
    state_->api_key = std::move(api_key);
    state_->timeout = timeout;
}

Connection::~Connection() {
    if (state_->open) state_->close();
}

void Connection::connect() { state_->connect(); }

HttpAnswer Connection::request(const std::string& target, const std::string& body) {
    auto req = state_->make(target, body);
    std::optional<http::response_parser<http::buffer_body>> parser;
    state_->send(req, parser, nullptr);
    HttpAnswer answer;
    answer.status = static_cast<int>(parser->get().result_int());
    state_->read_body(*parser, [&](std::string_view bytes) { answer.body.append(bytes); });
    return answer;
}

int Connection::stream(const std::string& target, const std::string& body, const std::function<void()>& on_sent,
                       const std::function<void(std::string_view)>& on_bytes, std::string& error_body) {
    auto req = state_->make(target, body);
    req.set(http::field::accept, "text/event-stream");
    std::optional<http::response_parser<http::buffer_body>> parser;
    state_->send(req, parser, on_sent);
    const int status = static_cast<int>(parser->get().result_int());
    if (status == 200) {
        state_->read_body(*parser, on_bytes);
    } else {
        state_->read_body(*parser, [&](std::string_view bytes) { error_body.append(bytes); });
    }
    return status;
}

}  // namespace tf::bench
