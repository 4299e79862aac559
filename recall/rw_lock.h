// WriterPreferringLock: a reader-writer lock under which a waiting writer
// goes before new readers. std::shared_mutex on glibc prefers readers: reader
// actors that look up every round could hold off the one writer (adds,
// eviction, DELETE) indefinitely. Meets the SharedMutex requirements, so
// std::unique_lock and std::shared_lock work with it.
#pragma once

#include <pthread.h>

#include <cstdlib>

namespace tf::recall {

class WriterPreferringLock {
   public:
    WriterPreferringLock() {
        pthread_rwlockattr_t attr;
        pthread_rwlockattr_init(&attr);
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        if (pthread_rwlock_init(&lock_, &attr) != 0) std::abort();
        pthread_rwlockattr_destroy(&attr);
    }
    ~WriterPreferringLock() { pthread_rwlock_destroy(&lock_); }
    WriterPreferringLock(const WriterPreferringLock&) = delete;
    WriterPreferringLock& operator=(const WriterPreferringLock&) = delete;

    void lock() { pthread_rwlock_wrlock(&lock_); }
    bool try_lock() { return pthread_rwlock_trywrlock(&lock_) == 0; }
    void unlock() { pthread_rwlock_unlock(&lock_); }
    // Not recursive: a thread holding it shared must not take it again while
    // a writer waits (Record never does).
    void lock_shared() { pthread_rwlock_rdlock(&lock_); }
    bool try_lock_shared() { return pthread_rwlock_tryrdlock(&lock_) == 0; }
    void unlock_shared() { pthread_rwlock_unlock(&lock_); }

   private:
    pthread_rwlock_t lock_;
};

}  // namespace tf::recall
