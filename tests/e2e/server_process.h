// The real `tensorfold serve` in a child process on a free loopback port
// (--port 0; the port comes from its "listening on http://HOST:PORT" line),
// and a small HTTP/1.1 client (Boost.Beast) to talk to it.
#pragma once

#include "tests/support/run_command.h"

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

class ServerProcess {
public:
    // Starts `tensorfold serve MODEL --port PORT --threads 2 ARGS...` and
    // waits for its listening line (or its exit).
    explicit ServerProcess(std::vector<std::string> args, std::string model = tinycode_dir(), std::string port = "0") {
        std::vector<std::string> argv = {binary(), "serve", model, "--port", port, "--threads", "2"};
        argv.insert(argv.end(), args.begin(), args.end());
        int fds[2];
        if (::pipe(fds) != 0) return;
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(fds[1], 1);
            ::dup2(fds[1], 2);
            ::close(fds[0]);
            ::close(fds[1]);
            std::vector<char*> raw;
            for (auto& a : argv) raw.push_back(a.data());
            raw.push_back(nullptr);
            ::execv(raw[0], raw.data());
            ::_exit(127);
        }
        ::close(fds[1]);
        fd_ = fds[0];
        reader_ = std::thread([this] { drain(); });
        // Woken by each piece of output the reader thread appends; 120 s only
        // bounds a server that never says it listens (listening() is then false).
        const std::regex listening(R"(listening on http://[^:\s]+:(\d+))");
        std::smatch m;
        std::unique_lock lock(mutex_);
        output_changed_.wait_for(lock, std::chrono::seconds(120),
                                 [&] { return std::regex_search(output_, m, listening) || eof_; });
        if (!m.empty()) port_ = static_cast<uint16_t>(std::stoi(m[1]));
    }

    ~ServerProcess() { stop(); }
    ServerProcess(const ServerProcess&) = delete;
    ServerProcess& operator=(const ServerProcess&) = delete;

    bool listening() const { return port_ != 0; }
    uint16_t port() const { return port_; }
    std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

    std::string output() const {
        std::lock_guard lock(mutex_);
        return output_;
    }

    // SIGTERM, then the exit status (-1: killed by a signal or not started).
    int stop() {
        if (pid_ <= 0) return exit_code_;
        if (!exited_) ::kill(pid_, SIGTERM);
        return wait();
    }

    // Waits for the process to exit on its own (for servers that refuse to start).
    int wait() {
        if (pid_ <= 0) return exit_code_;
        int status = 0;
        ::waitpid(pid_, &status, 0);
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        pid_ = 0;
        exited_ = true;
        if (reader_.joinable()) reader_.join();
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        return exit_code_;
    }

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
    void drain() {
        char buffer[4096];
        for (;;) {
            const ssize_t n = ::read(fd_, buffer, sizeof buffer);
            std::lock_guard lock(mutex_);
            if (n <= 0) {
                eof_ = true;
                output_changed_.notify_all();
                return;
            }
            output_.append(buffer, static_cast<size_t>(n));
            output_changed_.notify_all();
        }
    }

    pid_t pid_ = -1;
    int fd_ = -1;
    uint16_t port_ = 0;
    bool exited_ = false;
    int exit_code_ = -1;
    std::thread reader_;
    mutable std::mutex mutex_;
    std::condition_variable output_changed_;  // output_ grew or eof_ was set
    std::string output_;
    bool eof_ = false;
};

// Runs a shell command; its stdout.
inline std::string shell(const std::string& command) { return test_support::run_command(command).output; }

}  // namespace tf::e2e
