// The real `tensorfold serve` in a child process on a free loopback port
// (--port 0; the port comes from its "listening on http://HOST:PORT" line),
// and a small HTTP/1.1 client (Boost.Beast) to talk to it.
#pragma once

#include "tests/support/run_command.h"
#include "child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tf::e2e {

inline std::string binary() {
    const char* path = std::getenv("TF_BINARY");
    return path ? path : "tensorfold";
}

inline std::string source_dir() {
    const char* dir = std::getenv("TF_SOURCE_DIR");
    return dir ? dir : TF_SOURCE_DIR_FOR_TESTS;
}

inline std::string tinycode_dir() { return source_dir() + "/models/tinycode"; }

// A fresh directory under the system temp dir, removed at the end.
class TempDir {
public:
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "tf-e2e-XXXXXX").string();
        path_ = ::mkdtemp(pattern.data()) ? pattern : "";
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

struct Response {
    int status = 0;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;
};

// One HTTP/1.1 request on a new connection to 127.0.0.1:port; the whole answer.
inline Response http_request(uint16_t port, const std::string& method, const std::string& target,
                         const std::string& body = "", const std::map<std::string, std::string>& headers = {}) {
    namespace beast = boost::beast;
    namespace http = beast::http;
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, "127.0.0.1");
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : headers) req.set(name, value);
    req.body() = body;
    req.prepare_payload();
    http::write(socket, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    http::read(socket, buffer, parser);
    Response out;
    out.status = static_cast<int>(parser.get().result_int());
    for (const auto& field : parser.get()) {
        std::string name(field.name_string());
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        out.headers[name] = std::string(field.value());
    }
    out.body = parser.get().body();
    beast::error_code ignored;
    socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    return out;
}

// `tensorfold serve` in a ChildProcess, with the port it listens on.
class ServerProcess {
public:
    // Starts `tensorfold serve MODEL --port PORT --threads 2 --log-level debug
    // ARGS...` and
    // waits for its listening line (or its exit).
    explicit ServerProcess(std::vector<std::string> args, std::string model = tinycode_dir(), std::string port = "0")
        : process_(serve_argv(std::move(args), std::move(model), std::move(port))) {
        // kEventDeadline only bounds a server that never says it listens
        // (listening() is then false).
        const std::vector<std::string> listening =
            process_.wait_for_output(std::regex(R"(listening on http://[^:\s]+:(\d+))"));
        if (!listening.empty()) port_ = static_cast<uint16_t>(std::stoi(listening[1]));
    }

    bool listening() const { return port_ != 0; }
    uint16_t port() const { return port_; }
    std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::string output() const { return process_.output(); }

    // Until `done`, looked at again after each new piece of the server's
    // output (ChildProcess::wait_for_output_change). The record's writer
    // logs a debug line after each add and erase, so a condition on the
    // record's report is seen as soon as it holds.
    bool wait_for_output_change(const std::function<bool()>& done) { return process_.wait_for_output_change(done); }

    // SIGTERM, then the exit status (-1: killed by a signal or not started).
    int stop() { return process_.stop(); }
    // Waits for the process to exit on its own (for servers that refuse to start).
    int wait() { return process_.wait(); }

    Response request(const std::string& method, const std::string& target, const std::string& body = "",
                     const std::map<std::string, std::string>& headers = {}) const {
        return http_request(port_, method, target, body, headers);
    }

    Response get(const std::string& target, const std::map<std::string, std::string>& headers = {}) const {
        return request("GET", target, "", headers);
    }
    Response post(const std::string& target, const std::string& body,
                  const std::map<std::string, std::string>& headers = {}) const {
        return request("POST", target, body, headers);
    }

private:
    static std::vector<std::string> serve_argv(std::vector<std::string> args, std::string model, std::string port) {
        // Debug: the record's writer announces each add (the waits above).
        std::vector<std::string> argv = {binary(), "serve", std::move(model), "--port", std::move(port), "--threads", "2",
                                         "--log-level", "debug"};
        argv.insert(argv.end(), args.begin(), args.end());
        return argv;
    }

    ChildProcess process_;
    uint16_t port_ = 0;
};

// Runs a shell command; its stdout.
inline std::string shell(const std::string& command) { return test_support::run_command(command).output; }

}  // namespace tf::e2e
