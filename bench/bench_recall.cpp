// bench_recall: append throughput, lookup latency and start-up time of the
// recall record on real files (docs/performance.md, "Recall record: append,
// lookup, start-up (issue 5)").
//
//   bench_recall [--dir /tmp] [--mib 64,512] [--lookups 200000]
//
// For each record size: fills a fresh record in a temporary directory under
// --dir with a realistic stream of requests (token ids from a Zipf-like
// distribution over a 32,000-id vocabulary; a third of the requests repeat
// passages of earlier ones, which dedupe skips) until it is full, then keeps
// appending 10% more through eviction; times lookups whose 64-id tails hit
// (taken from live text) and miss (fresh text); times start-up (open + index)
// with the files in the page cache and after dropping them from it. Measures
// memcpy and file write/read bandwidth on the same machine for comparison.
// Deletes everything it wrote.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "recall/record.h"

namespace {

using Clock = std::chrono::steady_clock;
using tf::recall::Record;
using tf::recall::RecordOptions;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// splitmix64: deterministic, fast.
struct Rng {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    uint64_t below(uint64_t n) { return next() % n; }
};

constexpr uint32_t kVocab = 32000;

// Zipf-like (s = 1): id = floor(V^u) - 1 is log-uniform, so id k has
// probability ~ 1/(k+1): few ids are very common, most are rare.
uint32_t zipf_id(Rng& rng) {
    return static_cast<uint32_t>(std::pow(static_cast<double>(kVocab), rng.uniform())) - 1;
}

struct Percentiles {
    double median_us = 0, p99_us = 0, p999_us = 0, mean_us = 0;
};

Percentiles percentiles(std::vector<double> us) {
    Percentiles p;
    if (us.empty()) return p;
    std::sort(us.begin(), us.end());
    auto at = [&](double q) { return us[std::min(us.size() - 1, static_cast<size_t>(q * static_cast<double>(us.size())))]; };
    p.median_us = at(0.5);
    p.p99_us = at(0.99);
    p.p999_us = at(0.999);
    double sum = 0;
    for (double v : us) sum += v;
    p.mean_us = sum / static_cast<double>(us.size());
    return p;
}

void drop_from_page_cache(const std::string& dir) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ::fdatasync(fd);
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        ::close(fd);
    }
}

// GB/s of memcpy over 256 MiB, best of 5.
double memcpy_gbps() {
    const size_t bytes = size_t{256} << 20;
    std::vector<char> a(bytes, 1), b(bytes, 2);
    double best = 0;
    for (int i = 0; i < 5; ++i) {
        auto start = Clock::now();
        std::memcpy(b.data(), a.data(), bytes);
        best = std::max(best, static_cast<double>(bytes) / seconds_since(start) / 1e9);
    }
    return best + (b[12345] == 7 ? 1e-12 : 0);  // keep the copy
}

// MB/s writing 256 MiB with write(2) of 4 MiB buffers (page cache, no fsync:
// what an append does), then reading it back cold.
void file_bandwidth(const std::string& dir, double* write_mbps, double* cold_read_mbps) {
    const size_t block = size_t{4} << 20, blocks = 64;
    std::vector<char> buffer(block, 3);
    std::string path = dir + "/bandwidth.tmp";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    auto start = Clock::now();
    for (size_t i = 0; i < blocks; ++i) {
        if (::write(fd, buffer.data(), block) != static_cast<ssize_t>(block)) std::abort();
    }
    *write_mbps = static_cast<double>(block * blocks) / seconds_since(start) / 1e6;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    start = Clock::now();
    while (::read(fd, buffer.data(), block) > 0) {
    }
    *cold_read_mbps = static_cast<double>(block * blocks) / seconds_since(start) / 1e6;
    ::close(fd);
    ::unlink(path.c_str());
}

void bench(const std::string& base_dir, uint64_t mib, size_t lookups) {
    char pattern[4096];
    std::snprintf(pattern, sizeof pattern, "%s/bench-recall-XXXXXX", base_dir.c_str());
    if (!::mkdtemp(pattern)) {
        std::perror("mkdtemp");
        std::exit(1);
    }
    const std::string dir = pattern;
    RecordOptions options;
    options.dir = dir + "/record";
    options.capacity_bytes = mib << 20;
    options.model = "bench";
    options.tokenizer = {"0123456789abcdef0123456789abcdef", kVocab};
    options.min_free_bytes = 0;
    const uint64_t capacity_ids = options.capacity_bytes / 4;

    Rng rng{42 + mib};
    std::vector<uint32_t> history;  // every id offered, in order
    history.reserve(capacity_ids + capacity_ids / 4);
    std::vector<uint32_t> request;
    auto make_request = [&] {
        request.clear();
        const size_t length = 1000 + rng.below(2000);
        // A third repeat a passage of an earlier request (a regenerated
        // request, code copied from an earlier session).
        if (history.size() > 100000 && rng.below(3) == 0) {
            const size_t passage = 200 + rng.below(1300);
            const size_t from = rng.below(history.size() - passage);
            const size_t fresh = length > passage ? (length - passage) / 2 : 0;
            for (size_t i = 0; i < fresh; ++i) request.push_back(zipf_id(rng));
            request.insert(request.end(), history.begin() + static_cast<std::ptrdiff_t>(from),
                           history.begin() + static_cast<std::ptrdiff_t>(from + passage));
            for (size_t i = 0; i < fresh; ++i) request.push_back(zipf_id(rng));
        } else {
            for (size_t i = 0; i < length; ++i) request.push_back(zipf_id(rng));
        }
    };

    // Fill to capacity, then 10% more (through eviction).
    auto record = Record::open(options);
    uint64_t offered = 0, written = 0, adds = 0;
    double fill_s = 0, evict_s = 0;
    uint64_t evict_offered = 0, evict_written = 0;
    while (record->stats().chunks_evicted == 0) {
        make_request();
        auto start = Clock::now();
        tf::recall::AddResult r = record->add(request);
        fill_s += seconds_since(start);
        history.insert(history.end(), request.begin(), request.end());
        offered += request.size();
        written += r.ids_written;
        ++adds;
    }
    const uint64_t fill_target = offered + offered / 10;
    while (offered < fill_target) {
        make_request();
        auto start = Clock::now();
        tf::recall::AddResult r = record->add(request);
        evict_s += seconds_since(start);
        history.insert(history.end(), request.begin(), request.end());
        offered += request.size();
        evict_offered += request.size();
        evict_written += r.ids_written;
        written += r.ids_written;
        ++adds;
    }
    tf::recall::RecordStats stats = record->stats();
    const uint64_t fill_offered = offered - evict_offered, fill_written = written - evict_written;

    // Lookups: tails of 64 ids. Hits come from the newest 80% of the record's
    // worth of history (still live); misses are fresh text.
    const size_t tail = 64;
    const uint64_t live_from = history.size() - (stats.token_ids * 8) / 10;
    std::vector<double> hit_us, miss_us, all_us;
    uint64_t hits_found = 0, misses_found = 0, continuation_ids = 0;
    std::vector<uint32_t> miss_tail(tail);
    for (size_t i = 0; i < lookups; ++i) {
        const bool hit = (i & 1) == 0;
        const uint32_t* tail_ptr;
        if (hit) {
            const uint64_t end = live_from + tail + rng.below(history.size() - live_from - tail);
            tail_ptr = history.data() + end - tail;
        } else {
            for (uint32_t& id : miss_tail) id = zipf_id(rng);
            tail_ptr = miss_tail.data();
        }
        auto start = Clock::now();
        tf::recall::Match m = record->lookup(std::span<const uint32_t>(tail_ptr, tail), 32);
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        (hit ? hit_us : miss_us).push_back(us);
        all_us.push_back(us);
        if (m.length > 0) (hit ? hits_found : misses_found) += 1;
        continuation_ids += m.continuation.size();
    }
    record.reset();

    // Start-up: open + read + index, warm page cache, then cold.
    auto start = Clock::now();
    record = Record::open(options);
    const double warm_open_s = seconds_since(start);
    record.reset();
    drop_from_page_cache(options.dir);
    start = Clock::now();
    record = Record::open(options);
    const double cold_open_s = seconds_since(start);
    const uint64_t reopened_ids = record->stats().ids;
    record.reset();

    Percentiles hit = percentiles(hit_us), miss = percentiles(miss_us), all = percentiles(all_us);
    std::printf("\n### record of %llu MiB (%llu ids)\n", static_cast<unsigned long long>(mib),
                static_cast<unsigned long long>(capacity_ids));
    std::printf("on disk %.1f MiB in %llu chunks, in memory %.1f MiB (key table %.1f MiB)\n",
                static_cast<double>(stats.disk_bytes) / (1 << 20), static_cast<unsigned long long>(stats.chunks),
                static_cast<double>(stats.memory_bytes) / (1 << 20),
                static_cast<double>(stats.key_table_bytes) / (1 << 20));
    std::printf("append, filling:   %llu adds, %.2f M ids offered/s, %.2f M ids written/s (%.0f%% written, rest held)\n",
                static_cast<unsigned long long>(adds), static_cast<double>(fill_offered) / fill_s / 1e6,
                static_cast<double>(fill_written) / fill_s / 1e6,
                100.0 * static_cast<double>(fill_written) / static_cast<double>(fill_offered));
    std::printf("append, evicting:  %.2f M ids offered/s, %.2f M ids written/s = %.0f MB/s of chunk file\n",
                static_cast<double>(evict_offered) / evict_s / 1e6, static_cast<double>(evict_written) / evict_s / 1e6,
                static_cast<double>(evict_written) * 4 / evict_s / 1e6);
    std::printf("lookup (64-id tail, max 32): hits    median %.2f us  p99 %.2f us  p99.9 %.2f us  (%.1f%% found)\n",
                hit.median_us, hit.p99_us, hit.p999_us, 200.0 * static_cast<double>(hits_found) / static_cast<double>(lookups));
    std::printf("                             misses  median %.2f us  p99 %.2f us  p99.9 %.2f us  (%.1f%% found)\n",
                miss.median_us, miss.p99_us, miss.p999_us,
                200.0 * static_cast<double>(misses_found) / static_cast<double>(lookups));
    std::printf("                             all     median %.2f us  p99 %.2f us  mean %.2f us (%zu lookups)\n",
                all.median_us, all.p99_us, all.mean_us, lookups);
    std::printf("start-up (open, read, index %llu ids): warm %.3f s = %.3f s per 64 MiB; cold %.3f s = %.3f s per 64 MiB\n",
                static_cast<unsigned long long>(reopened_ids), warm_open_s,
                warm_open_s * 64.0 / static_cast<double>(mib), cold_open_s, cold_open_s * 64.0 / static_cast<double>(mib));
    std::printf("(continuation ids returned: %llu)\n", static_cast<unsigned long long>(continuation_ids));
    std::fflush(stdout);
    std::filesystem::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
    std::string dir = "/tmp";
    std::vector<uint64_t> sizes = {64, 512};
    size_t lookups = 200000;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--dir") {
            dir = value;
        } else if (flag == "--mib") {
            sizes.clear();
            for (size_t at = 0; at < value.size();) {
                size_t comma = value.find(',', at);
                sizes.push_back(std::stoull(value.substr(at, comma - at)));
                at = comma == std::string::npos ? value.size() : comma + 1;
            }
        } else if (flag == "--lookups") {
            lookups = std::stoull(value);
        } else {
            std::fprintf(stderr, "usage: bench_recall [--dir /tmp] [--mib 64,512] [--lookups 200000]\n");
            return 2;
        }
    }
    double write_mbps = 0, read_mbps = 0;
    file_bandwidth(dir, &write_mbps, &read_mbps);
    std::printf("machine limits: memcpy %.1f GB/s; file write(2) %.0f MB/s (page cache); cold file read %.0f MB/s\n",
                memcpy_gbps(), write_mbps, read_mbps);
    for (uint64_t mib : sizes) bench(dir, mib, lookups);
    return 0;
}
