// FsOps: the two file-system calls whose failures a test running as root
// cannot provoke on real files: unlinking a chunk file (root unlinks in a
// read-only directory) and the free space left on the record's disk. Every
// other file operation of recall/ runs for real, in tests too.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace tf::recall {

struct FsOps {
    // Same contract as unlink(2): 0 on success, -1 with errno set on failure.
    std::function<int(const std::string& path)> unlink;
    // Bytes available to this process on the file system holding `path`, or
    // nullopt (errno set) when it cannot be measured.
    std::function<std::optional<uint64_t>(const std::string& path)> free_bytes;

    // unlink(2) and statvfs(3) (f_bavail * f_frsize).
    static FsOps real();
};

}  // namespace tf::recall
