#include "recall/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "recall/identity.h"
#include "recall/private_files.h"

namespace tf::recall {

DirectoryLock::~DirectoryLock() { release(); }

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

DirectoryLock& DirectoryLock::operator=(DirectoryLock&& other) noexcept {
    if (this != &other) {
        release();
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

DirectoryLock::Outcome DirectoryLock::try_lock(const std::string& dir) {
    release();
    std::string path = dir + "/lock";
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw RecallError(open_failure(path, errno));
    // The lock holds no ids, so a mode of our own file is put right rather
    // than refused; a link or another user's file is refused like any other.
    struct stat st {};
    if (::fstat(fd, &st) == 0 && (st.st_mode & 0777) != 0600 && st.st_uid == ::geteuid()) ::fchmod(fd, 0600);
    try {
        check_private_file(fd, path);
    } catch (...) {
        ::close(fd);
        throw;
    }
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::close(fd);
        if (err == EWOULDBLOCK) return Outcome::held_elsewhere;
        throw RecallError("recall: cannot lock " + path + ": " + std::strerror(err) + "; pass another --recall-dir");
    }
    fd_ = fd;
    return Outcome::held;
}

void DirectoryLock::release() {
    if (fd_ >= 0) {
        ::close(fd_);  // closing the last descriptor releases the flock
        fd_ = -1;
    }
}

}  // namespace tf::recall
