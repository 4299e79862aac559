#include "http/server.h"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

namespace tf::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr size_t kMaxPipelinedBytes = 1u << 20;
constexpr uint32_t kHeaderLimit = 64u << 10;

class Connection;

// The state the listener and every connection share.
struct Shared {
    ServerOptions options;
    Handler handler;
    std::atomic<bool> stopping{false};
    std::atomic<int> busy{0};  // connections with an answer in progress
    std::mutex mutex;
    std::vector<std::weak_ptr<Connection>> connections;
};

class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(tcp::socket&& socket, Shared& shared) : stream_(std::move(socket)), shared_(shared) {}

    void run() {
        net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_request(); });
    }

    // Closes the connection if it is waiting for a request (graceful stop).
    void close_if_idle() {
        net::post(stream_.get_executor(), [self = shared_from_this()] {
            if (self->state_ == State::reading) self->close();
        });
    }

    auto executor() { return stream_.get_executor(); }

    // --- called on the strand by the responder ---------------------------
    void respond(uint64_t request, int status, std::string content_type, std::string body, Headers extra) {
        if (request != request_ || state_ != State::handling) return;
        auto message = std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(status), version_);
        message->set(bhttp::field::server, "tensorfold");
        message->set(bhttp::field::content_type, content_type);
        for (auto& [name, value] : extra) message->set(name, value);
        message->keep_alive(keep_alive());
        message->body() = std::move(body);
        message->prepare_payload();
        state_ = State::answered;
        enqueue([message](Connection& c, auto done) { bhttp::async_write(c.stream_, *message, std::move(done)); }, true);
    }

    void start_events(uint64_t request, Headers extra) {
        if (request != request_ || state_ != State::handling) return;
        auto message = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::ok, version_);
        message->set(bhttp::field::server, "tensorfold");
        message->set(bhttp::field::content_type, "text/event-stream");
        message->set(bhttp::field::cache_control, "no-cache");
        for (auto& [name, value] : extra) message->set(name, value);
        message->keep_alive(keep_alive());
        message->chunked(true);
        auto serializer = std::make_shared<bhttp::response_serializer<bhttp::empty_body>>(*message);
        state_ = State::streaming;
        enqueue(
            [message, serializer](Connection& c, auto done) {
                bhttp::async_write_header(c.stream_, *serializer, std::move(done));
            },
            false);
    }

    void send_event(uint64_t request, std::string data) {
        if (request != request_ || state_ != State::streaming || data.empty()) return;
        auto payload = std::make_shared<std::string>(std::move(data));
        enqueue([payload](Connection& c, auto done) {
            net::async_write(c.stream_, bhttp::make_chunk(net::buffer(*payload)), std::move(done));
        }, false);
    }

    void end_events(uint64_t request) {
        if (request != request_ || state_ != State::streaming) return;
        state_ = State::answered;
        enqueue([](Connection& c, auto done) { net::async_write(c.stream_, bhttp::make_chunk_last(), std::move(done)); },
                true);
    }

    bool disconnected() const { return disconnected_.load(); }

    void on_disconnect(std::function<void()> callback) {
        std::unique_lock lock(disconnect_mutex_);
        if (disconnected_) {
            lock.unlock();
            callback();
            return;
        }
        on_disconnect_ = std::move(callback);
    }

private:
    enum class State { reading, handling, streaming, answered, closed };
    using Done = std::function<void(beast::error_code, size_t)>;
    using Write = std::function<void(Connection&, Done)>;

    bool keep_alive() const { return keep_alive_ && !shared_.stopping; }

    void read_request() {
        if (shared_.stopping) return close();
        state_ = State::reading;
        ++request_;
        parser_.emplace();
        parser_->body_limit(shared_.options.body_limit);
        parser_->header_limit(kHeaderLimit);
        stream_.expires_after(first_request_ ? shared_.options.header_timeout : shared_.options.idle_timeout);
        first_request_ = false;
        bhttp::async_read_header(stream_, buffer_, *parser_,
                                 [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
    }

    // A client that sent "Expect: 100-continue" waits for "100 Continue"
    // before it sends the body (curl for bodies over 1 MiB, and others for
    // any body); without it such a client stalls a second or more.
    void on_header(beast::error_code ec) {
        if (ec) return on_read(ec);
        auto read_body = [self = shared_from_this()] {
            bhttp::async_read(self->stream_, self->buffer_, *self->parser_,
                              [self](beast::error_code ec, size_t) { self->on_read(ec); });
        };
        const auto& header = parser_->get();
        auto expect = header.find(bhttp::field::expect);
        if (expect == header.end() || !beast::iequals(expect->value(), "100-continue") || parser_->is_done()) {
            return read_body();
        }
        auto interim = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_, header.version());
        bhttp::async_write(stream_, *interim, [interim, read_body](beast::error_code write_error, size_t) {
            if (write_error) return;  // the client went; nothing to answer
            read_body();
        });
    }

    void on_read(beast::error_code ec) {
        if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout || ec == net::error::operation_aborted ||
            ec == net::error::connection_reset || ec == net::error::eof) {
            return close();
        }
        if (ec) {
            // The request could not be read whole: answer once, then close.
            keep_alive_ = false;
            version_ = 11;
            state_ = State::handling;
            const bool too_large = ec == bhttp::error::body_limit || ec == bhttp::error::header_limit;
            const std::string message = too_large ? "request too large (limit " +
                                                        std::to_string(shared_.options.body_limit) + " bytes)"
                                                  : "malformed HTTP request: " + ec.message();
            respond(request_, too_large ? 413 : 400, "application/json",
                    R"({"error":{"message":")" + message + R"(","type":"invalid_request_error","code":)" +
                        std::to_string(too_large ? 413 : 400) + "}}",
                    {});
            return;
        }
        const auto& message = parser_->get();
        HttpRequest request;
        request.method = std::string(message.method_string());
        const std::string target(message.target());
        const size_t question = target.find('?');
        request.path = target.substr(0, question);
        if (question != std::string::npos) request.query = target.substr(question + 1);
        if (auto it = message.find(bhttp::field::authorization); it != message.end()) {
            request.authorization = std::string(it->value());
        }
        if (auto it = message.find("x-api-key"); it != message.end()) request.x_api_key = std::string(it->value());
        request.body = message.body();
        keep_alive_ = message.keep_alive();
        version_ = message.version();
        state_ = State::handling;
        answer_done_ = false;
        stream_.expires_never();
        ++shared_.busy;
        busy_ = true;
        start_peek();

        auto responder = make_responder();
        try {
            shared_.handler(std::move(request), std::move(responder));
        } catch (const std::exception&) {
            respond(request_, 500, "application/json",
                    R"({"error":{"message":"internal error","type":"server_error","code":500}})", {});
        }
    }

    // While an answer is being made, a read notices a client that goes away
    // (and keeps any pipelined request bytes in buffer_ for the next parse).
    void start_peek() {
        if (peeking_ || buffer_.size() >= kMaxPipelinedBytes) return;
        peeking_ = true;
        stream_.async_read_some(buffer_.prepare(4096),
                                [self = shared_from_this()](beast::error_code ec, size_t n) { self->on_peek(ec, n); });
    }

    void on_peek(beast::error_code ec, size_t n) {
        peeking_ = false;
        if (!ec) {
            buffer_.commit(n);
            if (answer_done_) return next_request();
            return start_peek();
        }
        if (ec == net::error::operation_aborted && answer_done_) return next_request();
        if (state_ == State::closed) return;
        mark_disconnected();
        if (!writing_) close();
    }

    void enqueue(Write write, bool finishes_answer) {
        queue_.push_back({std::move(write), finishes_answer});
        if (!writing_) write_next();
    }

    void write_next() {
        if (queue_.empty() || state_ == State::closed) return;
        writing_ = true;
        Pending& pending = queue_.front();
        pending.write(*this, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_write(ec); });
    }

    void on_write(beast::error_code ec) {
        writing_ = false;
        const bool finished = queue_.front().finishes_answer;
        queue_.pop_front();
        if (ec) {
            mark_disconnected();
            return close();
        }
        if (!finished) return write_next();
        answer_done_ = true;
        if (busy_) {
            busy_ = false;
            --shared_.busy;
        }
        if (!keep_alive()) return close();
        if (peeking_) {
            stream_.socket().cancel();  // on_peek(operation_aborted) reads the next request
            return;
        }
        next_request();
    }

    void next_request() {
        if (state_ == State::closed) return;
        read_request();
    }

    void mark_disconnected() {
        std::function<void()> callback;
        {
            std::lock_guard lock(disconnect_mutex_);
            if (disconnected_.exchange(true) || answer_done_) return;
            callback = std::move(on_disconnect_);
        }
        if (callback) callback();
    }

    void close() {
        if (state_ == State::closed) return;
        if (!answer_done_ && state_ != State::reading) mark_disconnected();
        state_ = State::closed;
        if (busy_) {
            busy_ = false;
            --shared_.busy;
        }
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        stream_.socket().close(ignored);
    }

    std::shared_ptr<Responder> make_responder();

    struct Pending {
        Write write;
        bool finishes_answer;
    };

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    Shared& shared_;
    std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
    State state_ = State::reading;
    uint64_t request_ = 0;
    unsigned version_ = 11;
    bool keep_alive_ = false;
    bool first_request_ = true;
    bool answer_done_ = false;
    bool writing_ = false;
    bool peeking_ = false;
    bool busy_ = false;
    std::deque<Pending> queue_;
    std::atomic<bool> disconnected_{false};
    std::mutex disconnect_mutex_;
    std::function<void()> on_disconnect_;
};

class ConnectionResponder : public Responder {
public:
    ConnectionResponder(std::shared_ptr<Connection> connection, uint64_t request)
        : connection_(std::move(connection)), request_(request) {}

    void respond(int status, std::string content_type, std::string body, Headers extra) override {
        net::post(connection_->executor(), [c = connection_, r = request_, status, t = std::move(content_type),
                                            b = std::move(body), e = std::move(extra)]() mutable {
            c->respond(r, status, std::move(t), std::move(b), std::move(e));
        });
    }
    void start_events(Headers extra) override {
        net::post(connection_->executor(),
                  [c = connection_, r = request_, e = std::move(extra)]() mutable { c->start_events(r, std::move(e)); });
    }
    void send_event(std::string data) override {
        net::post(connection_->executor(),
                  [c = connection_, r = request_, d = std::move(data)]() mutable { c->send_event(r, std::move(d)); });
    }
    void end_events() override {
        net::post(connection_->executor(), [c = connection_, r = request_] { c->end_events(r); });
    }
    bool disconnected() const override { return connection_->disconnected(); }
    void on_disconnect(std::function<void()> callback) override { connection_->on_disconnect(std::move(callback)); }

private:
    std::shared_ptr<Connection> connection_;
    uint64_t request_;
};

std::shared_ptr<Responder> Connection::make_responder() {
    return std::make_shared<ConnectionResponder>(shared_from_this(), request_);
}

}  // namespace

struct Server::Impl {
    Shared shared;
    net::io_context io{};
    // Every use of the acceptor once start() has run (an accept completing,
    // the next one armed, the close in stop()) is on this strand: with two
    // I/O threads, a close from one thread while the other arms the next
    // accept crashed the reactor.
    net::strand<net::io_context::executor_type> accept_strand{net::make_strand(io)};
    tcp::acceptor acceptor{accept_strand};
    std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
    std::vector<std::thread> threads;
    std::once_flag stop_once;
    std::thread stopper;

    void accept() {
        acceptor.async_accept(net::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
            if (ec) {
                if (!acceptor.is_open()) return;  // stopped
            } else {
                // Streamed chunks are small writes: without this, Nagle's
                // algorithm holds each one until the client's delayed ACK
                // (about 40 ms on a reused keep-alive connection).
                beast::error_code ignored;
                socket.set_option(tcp::no_delay(true), ignored);
                auto connection = std::make_shared<Connection>(std::move(socket), shared);
                {
                    std::lock_guard lock(shared.mutex);
                    std::erase_if(shared.connections, [](const auto& weak) { return weak.expired(); });
                    shared.connections.push_back(connection);
                }
                connection->run();
            }
            accept();
        });
    }
};

Server::Server(ServerOptions options, Handler handler) : impl_(std::make_unique<Impl>()) {
    impl_->shared.options = std::move(options);
    impl_->shared.handler = std::move(handler);
    const ServerOptions& o = impl_->shared.options;
    beast::error_code ec;
    const auto address = net::ip::make_address(o.host, ec);
    if (ec) throw std::runtime_error("--host " + o.host + ": not an IP address (" + ec.message() + ")");
    const tcp::endpoint endpoint(address, o.port);
    auto fail = [&](const char* what) {
        throw std::runtime_error("cannot " + std::string(what) + " " + o.host + ":" + std::to_string(o.port) + ": " +
                                 ec.message());
    };
    impl_->acceptor.open(endpoint.protocol(), ec);
    if (ec) fail("open a socket for");
    impl_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
    impl_->acceptor.bind(endpoint, ec);
    if (ec) fail("bind");
    impl_->acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) fail("listen on");
}

Server::~Server() {
    stop(std::chrono::milliseconds(0));
    wait();
}

uint16_t Server::port() const {
    beast::error_code ec;
    return impl_->acceptor.local_endpoint(ec).port();
}

void Server::start() {
    impl_->work.emplace(net::make_work_guard(impl_->io));
    impl_->accept();
    const int threads = std::max(1, impl_->shared.options.threads);
    for (int i = 0; i < threads; ++i) impl_->threads.emplace_back([this] { impl_->io.run(); });
}

void Server::stop(std::chrono::milliseconds grace) {
    std::call_once(impl_->stop_once, [&] {
        Impl& impl = *impl_;
        impl.shared.stopping = true;
        net::post(impl.accept_strand, [&impl] {
            beast::error_code ignored;
            impl.acceptor.close(ignored);
        });
        {
            std::lock_guard lock(impl.shared.mutex);
            for (auto& weak : impl.shared.connections) {
                if (auto connection = weak.lock()) connection->close_if_idle();
            }
        }
        impl.stopper = std::thread([&impl, grace] {
            const auto deadline = std::chrono::steady_clock::now() + grace;
            while (impl.shared.busy > 0 && std::chrono::steady_clock::now() < deadline) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            impl.work.reset();
            impl.io.stop();
        });
    });
}

void Server::wait() {
    for (auto& thread : impl_->threads) {
        if (thread.joinable()) thread.join();
    }
    if (impl_->stopper.joinable()) impl_->stopper.join();
}

}  // namespace tf::http
