// Private files: the checks that keep the record a private thing of the
// server's user. The record is the conversations it came from (token ids turn
// straight back into text), so its directory and every file in it must be
// what this server made them: real (not symbolic links, which could point the
// server's reads and writes anywhere), owned by the server's user, and closed
// to group and others (docs/security.md).
//
// A record that fails a check is refused at start-up with a message naming
// the path, what is wrong and the fix; nothing is repaired silently, because
// a wrong owner or mode means someone other than this server touched it.
//
// Pure checks plus thin wrappers over open(2)/fstat(2); thread-safe.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>

namespace tf::recall {

enum class RecordEntry {
    directory,  // the record directory itself (0700)
    file,       // chunk-*.ids, identity, lock (0600)
};

// What is wrong with the entry at `path` whose lstat/fstat gave `mode` and
// `owner`, for a server running as `server_uid`, as a phrase to follow the
// path ("is a symbolic link", "is owned by uid 65534, not by this server's
// user (uid 0)", ...); nullopt when nothing is. The phrase includes the fix.
std::optional<std::string> access_problem(mode_t mode, uid_t owner, uid_t server_uid, RecordEntry entry,
                                          const std::string& path);

// Throws RecallError when `dir` is not a private directory of this user:
// opened with O_NOFOLLOW and checked with fstat. Returns false, touching
// nothing, when `dir` does not exist.
bool check_private_directory(const std::string& dir);

// Throws RecallError when the open file `fd` (opened from `path` with
// O_NOFOLLOW) is not a private regular file of this user.
void check_private_file(int fd, const std::string& path);

// The refusal for an open(2) with O_NOFOLLOW that failed with `error`: names
// a symbolic link as one. For messages; the caller throws.
std::string open_failure(const std::string& path, int error);

}  // namespace tf::recall
