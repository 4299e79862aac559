// Any program the operations tests run beside the server (prometheus,
// scripts/fleet, an installed tensorfold) in a child process of its own,
// with its stdout and stderr collected, and the waits those tests need:
// for a line of output, and for a condition checked again after each new
// piece of output.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace tf::e2e {

// How long a test waits for something that must happen. Generous because CI
// runs `ctest -j` on two busy cores; it only turns "never" into a failure.
inline constexpr std::chrono::seconds kEventDeadline{120};

class ChildProcess {
public:
    // Runs argv[0] (a path, or a name looked up in PATH) with the rest as its
    // arguments; `env` entries ("NAME=value") are added to this process's
    // environment or replace the variables they name.
    explicit ChildProcess(std::vector<std::string> argv, std::vector<std::string> env = {}) {
        // Everything exec needs is built before fork: the child of a
        // threaded process may only make async-signal-safe calls.
        const size_t added = env.size();
        for (char** e = environ; *e != nullptr; ++e) {
            const std::string entry = *e;
            const std::string name = entry.substr(0, entry.find('=') + 1);
            bool replaced = false;
            for (size_t i = 0; i < added; ++i) replaced = replaced || env[i].rfind(name, 0) == 0;
            if (!replaced) env.push_back(entry);
        }
        std::vector<char*> raw_env;
        for (std::string& entry : env) raw_env.push_back(entry.data());
        raw_env.push_back(nullptr);
        std::vector<char*> raw;
        for (std::string& a : argv) raw.push_back(a.data());
        raw.push_back(nullptr);
        int fds[2];
        if (::pipe(fds) != 0) return;
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(fds[1], 1);
            ::dup2(fds[1], 2);
            ::close(fds[0]);
            ::close(fds[1]);
            // Its own process group, so that stop() reaches what it starts too
            // (the fleet's replicas and HAProxy) if it dies before cleaning up.
            ::setpgid(0, 0);
            ::execvpe(raw[0], raw.data(), raw_env.data());
            ::_exit(127);
        }
        ::close(fds[1]);
        fd_ = fds[0];
        reader_ = std::thread([this] { drain(); });
    }

    ~ChildProcess() {
        stop();
        // Anything of its group left behind (a replica whose parent was killed).
        if (group_ > 0) ::kill(-group_, SIGKILL);
    }
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const { return pid_; }

    std::string output() const {
        std::lock_guard lock(mutex_);
        return output_;
    }

    // Waits until the output matches `pattern` or the process has closed its
    // output. Returns the match and its groups as copies (a std::smatch would
    // point into output that the reader thread goes on growing); empty when
    // nothing matched.
    std::vector<std::string> wait_for_output(const std::regex& pattern) {
        std::smatch match;
        std::unique_lock lock(mutex_);
        output_changed_.wait_for(lock, kEventDeadline, [&] {
            return std::regex_search(output_, match, pattern) || eof_;
        });
        std::vector<std::string> groups;
        if (std::regex_search(output_, match, pattern)) {
            for (const auto& group : match) groups.push_back(group.str());
        }
        return groups;
    }

    // Calls `done` now and again each time the process writes more output,
    // until it returns true; false if the output ends, or kEventDeadline
    // passes, first. For state the process announces with a line once it
    // has changed (a server's debug line after each record add): the size
    // is taken before each call, so a line written during it still wakes us.
    bool wait_for_output_change(const std::function<bool()>& done) {
        const auto deadline = std::chrono::steady_clock::now() + kEventDeadline;
        for (;;) {
            size_t seen = 0;
            {
                std::lock_guard lock(mutex_);
                seen = output_.size();
            }
            if (done()) return true;
            std::unique_lock lock(mutex_);
            if (!output_changed_.wait_until(lock, deadline, [&] { return output_.size() != seen || eof_; })) {
                return false;
            }
            if (output_.size() == seen) return false;  // the output ended
        }
    }

    void signal(int number) const {
        if (pid_ > 0) ::kill(pid_, number);
    }

    // Waits for the exit; the exit status, or -1 after a signal.
    int wait() {
        if (pid_ <= 0) return exit_code_;
        int status = 0;
        ::waitpid(pid_, &status, 0);
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        group_ = pid_;
        pid_ = 0;
        if (reader_.joinable()) reader_.join();
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        return exit_code_;
    }

    // SIGTERM and the exit status.
    int stop() {
        signal(SIGTERM);
        return wait();
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
    pid_t group_ = -1;
    int fd_ = -1;
    int exit_code_ = -1;
    std::thread reader_;
    mutable std::mutex mutex_;
    std::condition_variable output_changed_;
    std::string output_;
    bool eof_ = false;
};

}  // namespace tf::e2e
