// A persistent pool of worker threads for the CPU backend's kernels.
// parallel_for(count, fn) cuts [0, count) into chunks that the calling
// thread and the workers claim one at a time from a shared cursor, and
// returns when every chunk has run: a fork-join per kernel, with no thread
// creation per call. Claiming (not a fixed split) matters on a shared
// machine: when a worker is not scheduled, the caller runs its chunks
// instead of waiting for it. Which thread runs a chunk never changes a
// result: the kernels make each output one chunk-independent reduction.
//
// Workers spin briefly between kernels of one forward pass (they come
// microseconds apart) and then sleep on a condition variable, so an idle server takes no
// CPU.
//
// Thread-safety: parallel_for() is called by one thread at a time (the
// backend's owner); the function it runs must not call parallel_for().
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace tf::cpu {

class ThreadPool {
public:
    // `threads` in all, the caller included; 0 = std::thread::hardware_concurrency().
    explicit ThreadPool(int threads);  // at most 1024 threads
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return size_; }

    // Calls fn(begin, end) over disjoint ranges covering [0, count), from
    // any of the pool's threads; returns when all calls returned.
    template <class Fn>
    void parallel_for(int64_t count, Fn&& fn) {
        using F = std::remove_reference_t<Fn>;
        auto call = [](void* context, int64_t begin, int64_t end) { (*static_cast<F*>(context))(begin, end); };
        run(count, call, const_cast<void*>(static_cast<const void*>(&fn)));
    }

private:
    using Erased = void (*)(void*, int64_t, int64_t);
    void run(int64_t count, Erased fn, void* context);
    // Claims and runs chunks of generation `generation` until none is left.
    void work(uint64_t generation);
    void worker();
    void wake_workers();

    int size_ = 1;
    std::vector<std::thread> workers_;
    // The current job; written by the caller before it publishes the
    // generation in cursor_, read by a worker only after it claimed a chunk.
    std::atomic<Erased> task_{nullptr};
    std::atomic<void*> context_{nullptr};
    std::atomic<int64_t> count_{0};
    std::atomic<int64_t> grain_{1};
    // generation << 32 | chunk count << 16 | next chunk index.
    std::atomic<uint64_t> cursor_{0};
    std::atomic<uint32_t> done_{0};
    std::atomic<uint64_t> wake_{0};  // bumped per job; idle workers sleep until it changes
    std::atomic<int> sleepers_{0};
    std::mutex mutex_;
    std::condition_variable wake_cv_;
    std::atomic<bool> stop_{false};
};

}  // namespace tf::cpu
