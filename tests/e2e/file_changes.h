// A wait for state that another process shows through files: Prometheus
// appends to its write-ahead log on every scrape and rule evaluation, and
// the fleet's replicas write their log lines to files. The condition is
// checked now and again after each change in the watched directories
// (inotify), never on a timer; the deadline only turns "never" into a
// failure.
#pragma once

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "child_process.h"

namespace tf::e2e {

// Calls `done` until it returns true, again after each file created,
// written or moved into one of `dirs`; false once kEventDeadline has passed.
// The watches are in place before the first call, so no change is missed.
inline bool wait_for_file_changes(const std::vector<std::string>& dirs, const std::function<bool()>& done) {
    const int fd = ::inotify_init1(IN_CLOEXEC);
    if (fd < 0) return false;
    for (const std::string& dir : dirs) ::inotify_add_watch(fd, dir.c_str(), IN_CREATE | IN_MODIFY | IN_MOVED_TO);
    const auto deadline = std::chrono::steady_clock::now() + kEventDeadline;
    bool met = false;
    for (;;) {
        if (done()) {
            met = true;
            break;
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) break;
        pollfd ready{fd, POLLIN, 0};
        if (::poll(&ready, 1, static_cast<int>(left)) > 0) {
            alignas(inotify_event) char events[4096];
            (void)::read(fd, events, sizeof events);  // what changed does not matter: `done` looks again
        }
    }
    ::close(fd);
    return met;
}

}  // namespace tf::e2e
