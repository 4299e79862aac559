#include "recall/fs_ops.h"

#include <sys/statvfs.h>
#include <unistd.h>

namespace tf::recall {

FsOps FsOps::real() {
    FsOps ops;
    ops.unlink = [](const std::string& path) { return ::unlink(path.c_str()); };
    ops.write = [](int fd, const void* data, size_t bytes) { return ::write(fd, data, bytes); };
    ops.free_bytes = [](const std::string& path) -> std::optional<uint64_t> {
        struct statvfs fs {};
        if (::statvfs(path.c_str(), &fs) != 0) return std::nullopt;
        return static_cast<uint64_t>(fs.f_bavail) * static_cast<uint64_t>(fs.f_frsize);
    };
    return ops;
}

}  // namespace tf::recall
