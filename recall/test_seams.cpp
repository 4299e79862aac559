#include "recall/test_seams.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <utility>

#include "recall/identity.h"

namespace tf::recall {
namespace {

std::string_view trimmed(std::string_view text) {
    const char* space = " \t\r\n";
    size_t begin = text.find_first_not_of(space);
    if (begin == std::string_view::npos) return {};
    size_t end = text.find_last_not_of(space);
    return text.substr(begin, end - begin + 1);
}

std::optional<uint64_t> parse_decimal(std::string_view text) {
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// Shared by every copy of the FsOps: the write counter is per process.
struct FaultState {
    std::mutex mutex;
    std::vector<WriteFault> faults;
    uint64_t writes = 0;
    int pending_error = 0;  // set by a short write, consumed by the next call
};

}  // namespace

std::vector<WriteFault> parse_write_faults(std::string_view spec) {
    std::vector<WriteFault> faults;
    auto bad = [&](std::string_view item, const std::string& why) {
        return RecallError(std::string(kWriteFaultsVariable) + ": '" + std::string(item) + "' " + why +
                           "; expected N:ENOSPC, N:EIO, N:EDQUOT or N:SIGKILL (N >= 1), comma-separated");
    };
    size_t at = 0;
    while (at <= spec.size()) {
        size_t comma = spec.find(',', at);
        std::string_view item = trimmed(spec.substr(at, comma == std::string_view::npos ? spec.npos : comma - at));
        at = comma == std::string_view::npos ? spec.size() + 1 : comma + 1;
        size_t colon = item.find(':');
        if (colon == std::string_view::npos) throw bad(item, "has no ':'");
        std::optional<uint64_t> number = parse_decimal(item.substr(0, colon));
        if (!number || *number == 0) throw bad(item, "does not start with a write number of 1 or more");
        std::string_view name = item.substr(colon + 1);
        WriteFault fault;
        fault.write_number = *number;
        if (name == "ENOSPC") {
            fault.error = ENOSPC;
        } else if (name == "EIO") {
            fault.error = EIO;
        } else if (name == "EDQUOT") {
            fault.error = EDQUOT;
        } else if (name == "SIGKILL") {
            fault.kill = true;
        } else {
            throw bad(item, "names an unknown fault");
        }
        faults.push_back(fault);
    }
    return faults;
}

std::optional<uint64_t> parse_free_bytes(std::string_view text) { return parse_decimal(trimmed(text)); }

size_t torn_write_bytes(size_t bytes) {
    if (bytes < 4) return 0;
    // Whole ids up to about half the request, then half of the next id.
    return (bytes / 2) / 4 * 4 + 2;
}

FsOps with_test_seams(FsOps base, const std::function<const char*(const char*)>& getenv,
                      std::vector<std::string>* active) {
    if (const char* spec = getenv(kWriteFaultsVariable); spec && *spec) {
        auto state = std::make_shared<FaultState>();
        state->faults = parse_write_faults(spec);
        active->push_back(std::string(kWriteFaultsVariable) + "=" + spec);
        base.write = [state, real = base.write](int fd, const void* data, size_t bytes) -> ssize_t {
            std::unique_lock lock(state->mutex);
            const uint64_t number = ++state->writes;
            if (state->pending_error != 0) {
                errno = std::exchange(state->pending_error, 0);
                return -1;
            }
            for (const WriteFault& fault : state->faults) {
                if (fault.write_number != number) continue;
                const ssize_t written = real(fd, data, torn_write_bytes(bytes));
                if (fault.kill) ::kill(::getpid(), SIGKILL);
                state->pending_error = fault.error;
                return written;
            }
            lock.unlock();
            return real(fd, data, bytes);
        };
    }
    if (const char* path = getenv(kFreeBytesFileVariable); path && *path) {
        active->push_back(std::string(kFreeBytesFileVariable) + "=" + path);
        base.free_bytes = [file = std::string(path)](const std::string&) -> std::optional<uint64_t> {
            std::ifstream in(file);
            if (!in) {
                errno = ENOENT;
                return std::nullopt;
            }
            std::stringstream text;
            text << in.rdbuf();
            std::optional<uint64_t> bytes = parse_free_bytes(text.str());
            if (!bytes) errno = EINVAL;
            return bytes;
        };
    }
    return base;
}

}  // namespace tf::recall
