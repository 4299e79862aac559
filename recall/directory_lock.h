// DirectoryLock: the record's `lock` file, held with an exclusive flock(2) by
// the one server that writes the record.
//
// Only the holder of this empty file may add to the record; a server that
// finds it already held loads the record as it stands at start-up and never
// writes to it (docs/recall.md, "On disk" and "States", `following`).
//
// flock locks belong to an open file description: a second open of the same
// file (another DirectoryLock in this process, or another process) cannot take
// it while the first is held, and the kernel releases it when the holder
// closes the file or dies (kill -9 included), so a crashed writer never leaves
// a stale lock behind. The file itself stays; it holds no ids.
//
// Not thread-safe; owned by one Record.
#pragma once

#include <string>

namespace tf::recall {

class DirectoryLock {
   public:
    enum class Outcome { held, held_elsewhere };

    DirectoryLock() = default;
    ~DirectoryLock();
    DirectoryLock(DirectoryLock&& other) noexcept;
    DirectoryLock& operator=(DirectoryLock&& other) noexcept;
    DirectoryLock(const DirectoryLock&) = delete;
    DirectoryLock& operator=(const DirectoryLock&) = delete;

    // Creates `dir`/lock (empty, mode 0600) when missing and tries to take an
    // exclusive flock without waiting. held_elsewhere when another open file
    // description holds it. Throws RecallError when the file cannot be opened.
    Outcome try_lock(const std::string& dir);

    bool held() const { return fd_ >= 0; }
    void release();

   private:
    int fd_ = -1;
};

}  // namespace tf::recall
