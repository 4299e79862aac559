#include "recall/private_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "recall/identity.h"

namespace tf::recall {
namespace {

std::string octal(mode_t mode) {
    char text[16];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

const char* kind_name(RecordEntry entry) { return entry == RecordEntry::directory ? "directory" : "file"; }

std::string refusal(const std::string& path, RecordEntry entry, const std::string& problem) {
    return "recall: refusing the record " + std::string(kind_name(entry)) + " " + path + ": it " + problem;
}

bool is_symlink(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

}  // namespace

std::optional<std::string> access_problem(mode_t mode, uid_t owner, uid_t server_uid, RecordEntry entry,
                                          const std::string& path) {
    if (S_ISLNK(mode)) {
        return std::string("is a symbolic link; the record lives only in real files and directories, so replace "
                           "the link with what it points to, or pass another --recall-dir");
    }
    const bool right_type = entry == RecordEntry::directory ? S_ISDIR(mode) : S_ISREG(mode);
    if (!right_type) {
        return std::string("is not a ") + (entry == RecordEntry::directory ? "directory" : "regular file") +
               "; remove it or pass another --recall-dir";
    }
    if (owner != server_uid) {
        return "is owned by uid " + std::to_string(owner) + ", not by this server's user (uid " +
               std::to_string(server_uid) + "); run the server as that user or pass a --recall-dir of your own";
    }
    if ((mode & 077) != 0) {
        const char* fix = entry == RecordEntry::directory ? "700" : "600";
        return "has mode " + octal(mode) + ", which lets group or others in, and the record is the conversations "
               "it came from; check who may have read it, then run chmod " + std::string(fix) + " " + path;
    }
    return std::nullopt;
}

std::string open_failure(const std::string& path, int error) {
    if (error == ELOOP || is_symlink(path)) {
        return "recall: refusing " + path + ": it is a symbolic link; the record lives only in real files and "
               "directories, so replace the link with what it points to, or pass another --recall-dir";
    }
    return "recall: cannot open " + path + ": " + std::strerror(error) + "; pass another --recall-dir";
}

bool check_private_directory(const std::string& dir) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        const int error = errno;
        if (error == ENOENT) return false;
        if (error == ENOTDIR && !is_symlink(dir)) {
            throw RecallError(refusal(dir, RecordEntry::directory, "is not a directory; pass another --recall-dir"));
        }
        throw RecallError(open_failure(dir, error));
    }
    struct stat st {};
    const int stat_result = ::fstat(fd, &st);
    const int error = errno;
    ::close(fd);
    if (stat_result != 0) throw RecallError("recall: cannot stat " + dir + ": " + std::strerror(error));
    if (auto problem = access_problem(st.st_mode, st.st_uid, ::geteuid(), RecordEntry::directory, dir)) {
        throw RecallError(refusal(dir, RecordEntry::directory, *problem));
    }
    return true;
}

void check_private_file(int fd, const std::string& path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw RecallError("recall: cannot stat " + path + ": " + std::strerror(errno));
    if (auto problem = access_problem(st.st_mode, st.st_uid, ::geteuid(), RecordEntry::file, path)) {
        throw RecallError(refusal(path, RecordEntry::file, *problem));
    }
}

}  // namespace tf::recall
