#include "recall/chunk_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "recall/identity.h"
#include "recall/private_files.h"

namespace tf::recall {
namespace {

constexpr std::string_view kPrefix = "chunk-";
constexpr std::string_view kSuffix = ".ids";
constexpr size_t kDigits = 12;

}  // namespace

std::string chunk_file_name(uint64_t sequence) {
    char name[64];
    std::snprintf(name, sizeof name, "chunk-%012llu.ids", static_cast<unsigned long long>(sequence));
    return name;
}

std::optional<uint64_t> parse_chunk_file_name(std::string_view name) {
    if (name.size() != kPrefix.size() + kDigits + kSuffix.size()) return std::nullopt;
    if (name.substr(0, kPrefix.size()) != kPrefix || name.substr(name.size() - kSuffix.size()) != kSuffix) {
        return std::nullopt;
    }
    uint64_t sequence = 0;
    for (char c : name.substr(kPrefix.size(), kDigits)) {
        if (c < '0' || c > '9') return std::nullopt;
        sequence = sequence * 10 + static_cast<uint64_t>(c - '0');
    }
    return sequence;
}

std::vector<ChunkFileInfo> list_chunk_files(const std::string& dir) {
    std::vector<ChunkFileInfo> files;
    DIR* d = ::opendir(dir.c_str());
    if (!d) throw RecallError("recall: cannot list " + dir + ": " + std::strerror(errno) + "; pass another --recall-dir");
    while (struct dirent* entry = ::readdir(d)) {
        std::optional<uint64_t> sequence = parse_chunk_file_name(entry->d_name);
        if (!sequence) continue;
        ChunkFileInfo info;
        info.sequence = *sequence;
        info.path = dir + "/" + entry->d_name;
        struct stat st {};
        if (::lstat(info.path.c_str(), &st) != 0) continue;  // deleted meanwhile by the writer
        if (!S_ISREG(st.st_mode)) {
            ::closedir(d);
            // Owner and mode wait for the reader, but a link or a directory in
            // a chunk's place is refused here, before anything follows it.
            throw RecallError("recall: refusing the record file " + info.path + ": it " +
                              *access_problem(st.st_mode, st.st_uid, st.st_uid, RecordEntry::file, info.path));
        }
        info.bytes = static_cast<uint64_t>(st.st_size);
        info.mode = st.st_mode;
        info.owner = st.st_uid;
        files.push_back(std::move(info));
    }
    ::closedir(d);
    std::sort(files.begin(), files.end(),
              [](const ChunkFileInfo& a, const ChunkFileInfo& b) { return a.sequence < b.sequence; });
    return files;
}

ChunkRead read_chunk_file(const std::string& path, uint32_t* out, uint64_t max_ids, bool repair) {
    ChunkRead result;
    // O_NOFOLLOW: a link swapped in after the listing is refused, not read.
    int fd = ::open(path.c_str(), (repair ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            result.vanished = true;
            return result;
        }
        throw RecallError(open_failure(path, errno));
    }
    try {
        check_private_file(fd, path);
    } catch (...) {
        ::close(fd);
        throw;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        throw RecallError("recall: cannot stat " + path + ": " + std::strerror(err));
    }
    uint64_t bytes = static_cast<uint64_t>(st.st_size);
    result.torn_bytes = bytes % 4;
    if (repair && result.torn_bytes != 0 && ::ftruncate(fd, static_cast<off_t>(bytes - result.torn_bytes)) != 0) {
        int err = errno;
        ::close(fd);
        throw RecallError("recall: cannot cut the torn tail of " + path + ": " + std::strerror(err));
    }
    uint64_t want = std::min(bytes / 4, max_ids) * 4;
    auto* dst = reinterpret_cast<char*>(out);
    uint64_t done = 0;
    while (done < want) {
        ssize_t n = ::pread(fd, dst + done, want - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            ::close(fd);
            throw RecallError("recall: cannot read " + path + ": " + std::strerror(err));
        }
        if (n == 0) break;  // shrank meanwhile (a following server reading a live record)
        done += static_cast<uint64_t>(n);
    }
    ::close(fd);
    result.ids = done / 4;
    return result;
}

ChunkAppender::~ChunkAppender() { close(); }

bool ChunkAppender::open(const std::string& path, uint64_t ids, std::string* error) {
    close();
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        *error = "cannot open " + path + ": " + std::strerror(errno);
        return false;
    }
    ::fchmod(fd, 0600);  // whatever the umask: "each file 0600"
    fd_ = fd;
    path_ = path;
    ids_ = ids;
    return true;
}

bool ChunkAppender::append(const uint32_t* ids, uint64_t n, std::string* error, bool* out_of_space) {
    *out_of_space = false;
    const auto* src = reinterpret_cast<const char*>(ids);
    const uint64_t bytes = n * 4;
    uint64_t done = 0;
    while (done < bytes) {
        ssize_t w = write_ ? write_(fd_, src + done, bytes - done) : ::write(fd_, src + done, bytes - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int err = w < 0 ? errno : ENOSPC;
            *out_of_space = err == ENOSPC || err == EDQUOT;
            *error = "cannot append to " + path_ + ": " + std::strerror(err);
            // Cut back what this append wrote so the file holds whole earlier
            // appends only, as memory does.
            if (done > 0 && ::ftruncate(fd_, static_cast<off_t>(ids_ * 4)) != 0) {
                *error += " (and cutting it back failed: " + std::string(std::strerror(errno)) + ")";
            }
            return false;
        }
        done += static_cast<uint64_t>(w);
    }
    ids_ += n;
    return true;
}

void ChunkAppender::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    path_.clear();
    ids_ = 0;
}

}  // namespace tf::recall
