// FsOps: the file-system calls whose failures a test cannot provoke on real
// files, least of all as root: unlinking a chunk file (root unlinks in a
// read-only directory), appending to one (a disk that fills or fails part way
// through a write), and the free space left on the record's disk. Every other
// file operation of recall/ runs for real, in tests too.
//
// The real server can be given faulty versions of these through environment
// variables that only tests set (test_seams.h).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace tf::recall {

struct FsOps {
    // Same contract as unlink(2): 0 on success, -1 with errno set on failure.
    std::function<int(const std::string& path)> unlink;
    // Same contract as write(2), for the appends to chunk files: the bytes
    // written (possibly fewer than asked), or -1 with errno set.
    std::function<ssize_t(int fd, const void* data, size_t bytes)> write;
    // Bytes available to this process on the file system holding `path`, or
    // nullopt (errno set) when it cannot be measured.
    std::function<std::optional<uint64_t>(const std::string& path)> free_bytes;

    // unlink(2), write(2) and statvfs(3) (f_bavail * f_frsize).
    static FsOps real();
};

}  // namespace tf::recall
