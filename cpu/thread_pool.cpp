#include "cpu/thread_pool.h"

#include <immintrin.h>

#include <algorithm>

namespace tf::cpu {

namespace {

// About 20 us of polling before sleeping: bridges the gap between two
// kernels of one forward pass without burning a core shared with others.
constexpr int kSpins = 2000;
// Chunks per thread: small enough that a late thread still finds work,
// large enough that claiming costs little.
constexpr int64_t kChunksPerThread = 4;

}  // namespace

ThreadPool::ThreadPool(int threads) {
    size_ = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
    size_ = std::clamp(size_, 1, 1024);  // chunk counts stay under 2^16 (see cursor_)
    for (int i = 1; i < size_; ++i) workers_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_seq_cst);
    wake_workers();
    for (auto& t : workers_) t.join();
}

void ThreadPool::wake_workers() {
    wake_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
        { std::lock_guard lock(mutex_); }  // a sleeper between its check and its wait holds the mutex
        wake_cv_.notify_all();
    }
}

void ThreadPool::run(int64_t count, Erased fn, void* context) {
    if (count <= 0) return;
    const int64_t grain = std::max<int64_t>(1, (count + size_ * kChunksPerThread - 1) / (size_ * kChunksPerThread));
    const auto chunks = static_cast<uint32_t>((count + grain - 1) / grain);  // <= size_ * kChunksPerThread < 2^16
    if (size_ == 1 || chunks == 1) {
        fn(context, 0, count);
        return;
    }
    task_.store(fn, std::memory_order_relaxed);
    context_.store(context, std::memory_order_relaxed);
    count_.store(count, std::memory_order_relaxed);
    grain_.store(grain, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    const uint64_t generation = (cursor_.load(std::memory_order_relaxed) >> 32) + 1;
    cursor_.store(generation << 32 | uint64_t{chunks} << 16, std::memory_order_release);  // publishes the job
    wake_workers();
    work(generation);
    for (int i = 0; done_.load(std::memory_order_acquire) != chunks; ++i) {
        if (i < kSpins) {
            _mm_pause();
        } else {
            std::this_thread::yield();  // a worker holds a chunk but is not running
        }
    }
}

void ThreadPool::work(uint64_t generation) {
    uint64_t cursor = cursor_.load(std::memory_order_acquire);
    for (;;) {
        // The chunk count travels in the cursor itself: a worker holding a
        // stale cursor must not compare its index with the next job's count.
        if ((cursor >> 32) != generation) return;
        const auto index = static_cast<uint32_t>(cursor & 0xFFFFu);
        if (index >= static_cast<uint32_t>((cursor >> 16) & 0xFFFFu)) return;
        if (!cursor_.compare_exchange_weak(cursor, cursor + 1, std::memory_order_acq_rel)) continue;
        // Claimed chunk `index` of this generation: the caller waits for it,
        // so the job's fields stay valid until done_ counts it.
        const int64_t grain = grain_.load(std::memory_order_relaxed);
        const int64_t begin = index * grain, end = std::min(count_.load(std::memory_order_relaxed), begin + grain);
        task_.load(std::memory_order_relaxed)(context_.load(std::memory_order_relaxed), begin, end);
        done_.fetch_add(1, std::memory_order_acq_rel);
        cursor = cursor_.load(std::memory_order_acquire);
    }
}

void ThreadPool::worker() {
    uint64_t seen = wake_.load(std::memory_order_acquire);
    for (;;) {
        uint64_t now = wake_.load(std::memory_order_acquire);
        // stop_ too: a worker that starts after the destructor's wake-up
        // has already taken that wake-up as `seen`.
        for (int i = 0; now == seen && !stop_.load(std::memory_order_acquire); ++i) {
            if (i < kSpins) {
                _mm_pause();
            } else {
                // Sleep. Dekker-style with wake_workers(): a sleeper counts
                // itself before it checks wake_, the waker bumps wake_
                // before it checks sleepers_, both seq_cst, so one of them
                // sees the other and no wake-up is lost.
                std::unique_lock lock(mutex_);
                sleepers_.fetch_add(1, std::memory_order_seq_cst);
                wake_cv_.wait(lock, [&] { return wake_.load(std::memory_order_seq_cst) != seen || stop_.load(std::memory_order_seq_cst); });
                sleepers_.fetch_sub(1, std::memory_order_seq_cst);
            }
            now = wake_.load(std::memory_order_acquire);
        }
        seen = now;
        if (stop_.load(std::memory_order_acquire)) return;
        work(cursor_.load(std::memory_order_acquire) >> 32);
    }
}

}  // namespace tf::cpu
