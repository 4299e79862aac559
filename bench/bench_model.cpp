// bench-model: the CPU backend's forward cost by batch rows M, context and
// number of streams, on 1 and 2 threads; 512-token prefill and 128-token
// decode in tokens/s (comparable with llama-bench's pp512 and tg128); next
// to this machine's memory bandwidth (read-only sums in two access patterns
// and a STREAM-style triad) and the decode roofline (weight bytes one step
// reads / the best read bandwidth). A Google Benchmark program; after the runs it prints the
// markdown tables that docs/performance.md carries. The kernel path is
// TF_ISA / TF_ACTIVATIONS / TF_VNNI as for the server.
//
// Contexts past 1024 are made up (CpuBackend::fill_stream_for_benchmark)
// rather than prefilled, and eight streams run only where their KV fits in
// kStreamsBudget; --kv-type picks the cache's element type (default f16).
//
//   build/bench-model [--model=DIR] [--quantize=q8_0|q4_0|q5_0|q4_k|q5_k|q6_k] [--kv-type=f16|bf16|f32]
//                     [--prefill-tokens=512] [--benchmark_min_time=0.3] [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cpu/cpu_backend.h"

namespace {

using tf::cpu::CpuBackend;
using tf::model::Row;

std::string g_model_dir = TF_BENCH_DEFAULT_MODEL;
std::optional<tf::model::QuantType> g_quantize;  // --quantize=TYPE
tf::cpu::kernels::KvType g_kv_type = tf::cpu::kernels::kDefaultKvType;  // --kv-type=TYPE
constexpr int32_t kRowsList[] = {1, 2, 4, 8, 16, 32, 64};
constexpr int32_t kContexts[] = {0, 1024, 4096, 8192, 16384, 32768};
int32_t g_prefill_tokens = 512;   // --prefill-tokens=N
constexpr int32_t kPrefillChunk = 512;  // as the engine's lanes read a prompt (engine/lanes.h)
constexpr int32_t kLongRowsList[] = {1, 4, 16, 64};  // past 1024
constexpr int32_t kMostPrefilled = 1024;             // longer contexts are made up
constexpr int32_t kRoomPastContext = 65;             // a round of 64 rows, plus one
constexpr double kStreamsBudget = 12.0 * (1 << 30);  // bytes of KV the fixture's streams may take

// Runs fn(t, begin, end) for slice t of `threads` slices of [0, n), each
// on its own thread.
template <class Fn>
void on_slices(int threads, size_t n, Fn&& fn) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back([&, t] { fn(t, n * t / threads, n * (t + 1) / threads); });
    fn(0, size_t{0}, n / threads);
    for (auto& th : pool) th.join();
}

// STREAM triad a[i] = b[i] + s * c[i] over three arrays of `range(1)` MiB,
// `threads` threads each on its own slice. Counts 3 x 8 bytes per element,
// as STREAM does. 256 MiB arrays measure DRAM; 8 MiB arrays (24 MiB in all:
// past L2, inside this machine's L3) measure the cache level tinycode's
// 31.5 MB of weights live in when the L3 is large enough.
void triad(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    const size_t n = (static_cast<size_t>(state.range(1)) << 20) / sizeof(double);
    std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
    on_slices(threads, n, [&](int, size_t begin, size_t end) {  // first touch by the thread that will use the pages
        for (size_t i = begin; i < end; ++i) a[i] = 0.0, b[i] = 1.0, c[i] = 2.0;
    });
    for (auto _ : state) {
        on_slices(threads, n, [&](int, size_t begin, size_t end) {
            for (size_t i = begin; i < end; ++i) a[i] = b[i] + 3.0 * c[i];
        });
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(3 * n * sizeof(double)));
}

// Reads `range(1)` MiB on `threads` threads and sums it: the bandwidth a
// decode step can get, since it only reads weights. Two access patterns,
// since CPUs differ in which one the prefetchers serve best: "read" walks
// eight far-apart parts of each thread's slice side by side (as a matmul
// over row-major weights walks eight rows), "stream" reads each slice as one
// sequential stream with eight independent 16-byte accumulators (as the
// matmul over tiled weights does). The roofline takes the better.
void read_stream(benchmark::State& state) {
    using Lanes = uint64_t __attribute__((vector_size(16)));
    const int threads = static_cast<int>(state.range(0));
    const size_t n = (static_cast<size_t>(state.range(1)) << 20) / sizeof(Lanes);
    std::unique_ptr<Lanes[]> a(new Lanes[n]);
    std::vector<uint64_t> sums(static_cast<size_t>(threads));
    on_slices(threads, n, [&](int, size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) a[i] = Lanes{i, i + 1};
    });
    for (auto _ : state) {
        on_slices(threads, n, [&](int t, size_t begin, size_t end) {
            Lanes s[8] = {};
            const size_t whole = begin + (end - begin) / 8 * 8;
            for (size_t i = begin; i < whole; i += 8) {
                #pragma GCC unroll 8
                for (int j = 0; j < 8; ++j) s[j] += a[i + j];
            }
            Lanes total = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
            sums[t] = total[0] + total[1];
        });
        benchmark::DoNotOptimize(sums.data());
    }
    size_t read = 0;  // each slice rounded down to whole groups of eight
    for (int t = 0; t < threads; ++t) read += (n * (t + 1) / threads - n * t / threads) / 8 * 8;
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(read * sizeof(Lanes)));
}

void read_sum(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    const size_t n = (static_cast<size_t>(state.range(1)) << 20) / sizeof(uint64_t);
    std::unique_ptr<uint64_t[]> a(new uint64_t[n]);
    std::vector<uint64_t> sums(static_cast<size_t>(threads));
    on_slices(threads, n, [&](int, size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) a[i] = i;
    });
    for (auto _ : state) {
        on_slices(threads, n, [&](int t, size_t begin, size_t end) {
            const size_t part = (end - begin) / 64 * 8;  // eight parts of whole 64-byte lines
            uint64_t s[8] = {};
            for (size_t i = 0; i < part; i += 8) {
                for (int j = 0; j < 8; ++j) {
                    const uint64_t* q = &a[begin + j * part + i];
                    s[j] += q[0] + q[1] + q[2] + q[3] + q[4] + q[5] + q[6] + q[7];
                }
            }
            sums[t] = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
        });
        benchmark::DoNotOptimize(sums.data());
    }
    size_t read = 0;  // elements summed: each slice rounded down to whole parts
    for (int t = 0; t < threads; ++t) read += (n * (t + 1) / threads - n * t / threads) / 64 * 64;
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(read * sizeof(uint64_t)));
}

// One backend per thread count, with streams 0..7 filled once per context
// (as many as fit kStreamsBudget) and stream 8 free for prefill and decode.
struct Fixture {
    std::unique_ptr<CpuBackend> backend;
    int32_t context = -1;
    int32_t streams = 0;  // streams filled to `context`
};
std::map<int, Fixture> g_fixtures;

// How many streams of `context` tokens the fixture can hold.
int32_t streams_that_fit(const CpuBackend& backend, int32_t context) {
    const double per_stream = static_cast<double>(backend.kv_bytes_per_token()) * (context + kRoomPastContext);
    return per_stream <= 0 ? 8 : static_cast<int32_t>(std::min(8.0, kStreamsBudget / per_stream));
}

CpuBackend& backend_for(int threads, int32_t context) {
    Fixture& f = g_fixtures[threads];
    if (!f.backend) {
        const tf::cpu::KernelChoice choice = tf::cpu::kernel_choice_from_env();
        tf::cpu::WeightOptions weights;
        weights.quantize = g_quantize;
        f.backend = tf::cpu::load_cpu_backend(g_model_dir, threads, choice.isa, choice.activations, weights,
                                              choice.vnni, g_kv_type);
    }
    if (f.context != context) {
        // Reopened, not truncated: a recurrent model's stream cannot go back past its last forward.
        for (int s = 0; s < f.streams; ++s) f.backend->close_stream(s);
        f.streams = streams_that_fit(*f.backend, context);
        const bool made_up = context > kMostPrefilled && !f.backend->config().recurrent();
        for (int s = 0; s < f.streams; ++s) {
            f.backend->open_stream(s, std::max(kMostPrefilled, context) + kRoomPastContext);
            if (made_up) {
                f.backend->fill_stream_for_benchmark(s, context);
                continue;
            }
            std::vector<Row> rows;
            for (int32_t i = 0; i < context; ++i) rows.push_back({s, i, (i * 7919 + s * 31) % 8000 + 1, false});
            std::vector<float> logits;
            for (size_t at = 0; at < rows.size(); at += 64) {
                f.backend->forward(std::span(rows).subspan(at, std::min<size_t>(64, rows.size() - at)), logits);
            }
        }
        f.context = context;
    }
    return *f.backend;
}

// M rows at the end of the context: one stream (a verify-style chain of M
// tokens) or eight (M/8 each; M < 8: M streams with one row). Every row asks
// for logits, as in verification. The streams are cut back after each pass.
void forward(benchmark::State& state) {
    const auto M = static_cast<int32_t>(state.range(0));
    const auto context = static_cast<int32_t>(state.range(1));
    const auto streams = static_cast<int32_t>(state.range(2));
    const auto threads = static_cast<int>(state.range(3));
    CpuBackend& backend = backend_for(threads, context);
    if (streams > g_fixtures[threads].streams) {
        state.SkipWithError("the streams' KV does not fit the benchmark's memory budget");
        return;
    }
    const int32_t used = std::min(streams, M);
    std::vector<Row> rows;
    for (int32_t s = 0; s < used; ++s) {
        const int32_t per = M / used + (s < M % used ? 1 : 0);
        for (int32_t i = 0; i < per; ++i) rows.push_back({s, context + i, (s * 131 + i * 17) % 8000 + 1, true});
    }
    std::vector<float> logits;
    // One untimed pass first: the first forward of a shape grows the
    // scratch rows and touches their pages for the first time (at M = 64
    // the logits alone are 39 MB), and a run of a few iterations would
    // count that as the cost of a round.
    backend.forward(rows, logits);
    for (int32_t s = 0; s < used; ++s) backend.truncate(s, context);
    for (auto _ : state) {
        backend.forward(rows, logits);
        for (int32_t s = 0; s < used; ++s) backend.truncate(s, context);
        benchmark::DoNotOptimize(logits.data());
    }
    state.counters["tok/s"] = benchmark::Counter(static_cast<double>(M), benchmark::Counter::kIsIterationInvariantRate);
    // A mixture's round costs what its rows route to: the experts read a
    // layer, on average (these rows are unrelated tokens, so about as many
    // as the rows can reach; a verify round's drafts often share more).
    if (backend.config().moe.enabled()) state.counters["experts"] = backend.experts_touched();
}

// ppN (pp512 by default, --prefill-tokens=N): an N-token prompt read on an
// empty stream (stream 8) in forwards of 512 rows, as the server reads one,
// logits for its last row only.
void prefill(benchmark::State& state) {
    const auto threads = static_cast<int>(state.range(0));
    CpuBackend& backend = backend_for(threads, 0);
    const int32_t prompt = g_prefill_tokens;
    backend.open_stream(8, prompt);
    std::vector<Row> rows;
    for (int32_t i = 0; i < prompt; ++i) rows.push_back({8, i, (i * 7919) % 8000 + 1, i + 1 == prompt});
    std::vector<float> logits;
    auto read_prompt = [&] {
        for (size_t at = 0; at < rows.size(); at += kPrefillChunk)
            backend.forward(std::span(rows).subspan(at, std::min<size_t>(kPrefillChunk, rows.size() - at)), logits);
    };
    // A recurrent model's stream cannot go back: reopened. Others are cut
    // back, keeping their pages.
    auto restart = [&] {
        if (backend.config().recurrent()) {
            backend.close_stream(8);
            backend.open_stream(8, prompt);
        } else {
            backend.truncate(8, 0);
        }
    };
    // Untimed, as in forward(): first-touch costs are not prefill's. (A
    // long prompt is read once untimed and once timed, at least.)
    read_prompt();
    restart();
    for (auto _ : state) {
        read_prompt();
        restart();
    }
    backend.close_stream(8);
    state.counters["tok/s"] = benchmark::Counter(prompt, benchmark::Counter::kIsIterationInvariantRate);
}

// tg128: 128 one-row forwards in sequence on one stream, each with logits.
void decode(benchmark::State& state) {
    const auto threads = static_cast<int>(state.range(0));
    CpuBackend& backend = backend_for(threads, 0);
    constexpr int32_t kTokens = 128;
    backend.open_stream(8, kTokens);
    std::vector<float> logits;
    for (auto _ : state) {
        for (int32_t i = 0; i < kTokens; ++i) {
            const Row row{8, i, (i * 131) % 8000 + 1, true};
            backend.forward({&row, 1}, logits);
        }
        // Reopened: a recurrent model's stream cannot go back past its last forward.
        backend.close_stream(8);
        backend.open_stream(8, kTokens);
    }
    backend.close_stream(8);
    state.counters["tok/s"] = benchmark::Counter(kTokens, benchmark::Counter::kIsIterationInvariantRate);
}

// Recurrent models: what a verify round's rollback costs. A round of M rows
// at context 64 on stream 0, then truncate to 64 + kept (timed): the kept
// rows are replayed from the round's start state (none when kept is 0 or M).
void rollback(benchmark::State& state) {
    const auto M = static_cast<int32_t>(state.range(0));
    const auto kept = static_cast<int32_t>(state.range(1));
    const auto threads = static_cast<int>(state.range(2));
    constexpr int32_t kContext = 64;
    CpuBackend& backend = backend_for(threads, kContext);
    std::vector<Row> rows;
    for (int32_t i = 0; i < M; ++i) rows.push_back({0, kContext + i, (i * 17) % 8000 + 1, true});
    std::vector<float> logits;
    for (auto _ : state) {
        backend.forward(rows, logits);
        const auto begin = std::chrono::steady_clock::now();
        backend.truncate(0, kContext + kept);
        state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
        backend.truncate(0, kContext);
    }
}

// The alternative to replaying: a copy of every Mamba layer's state after
// each of M rows (per-row snapshots), timed as plain memcpy of those bytes.
void snapshot_copies(benchmark::State& state) {
    const auto M = static_cast<int32_t>(state.range(0));
    const tf::model::ModelConfig config = tf::model::load_model_config(g_model_dir);
    const auto layers = static_cast<size_t>(config.mamba_layer_count());
    const size_t bytes = layers * config.mamba.state_floats() * sizeof(float);
    std::vector<char> live(bytes, 1), copies(bytes * static_cast<size_t>(M));
    for (auto _ : state) {
        for (int32_t m = 0; m < M; ++m) std::memcpy(copies.data() + bytes * m, live.data(), bytes);
        benchmark::DoNotOptimize(copies.data());
    }
    state.counters["state_MiB"] = static_cast<double>(bytes) / (1 << 20);
}

// Keeps each run's time to build the markdown table after the console one.
class TableReporter : public benchmark::ConsoleReporter {
public:
    struct Entry {
        std::string name;
        double seconds;
        double bytes_per_second;
    };
    std::vector<Entry> entries;
    void ReportRuns(const std::vector<Run>& runs) override {
        for (const Run& run : runs) {
            if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
            const double seconds = run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit);
            auto it = run.counters.find("bytes_per_second");
            entries.push_back({run.benchmark_name(), seconds, it == run.counters.end() ? 0.0 : double(it->second)});
        }
        ConsoleReporter::ReportRuns(runs);
    }
};

void print_tables(const TableReporter& r) {
    std::map<std::pair<int, int>, double> bandwidth;  // (MiB per array, threads) -> GB/s
    std::map<std::string, double> seconds;
    std::map<std::pair<int, int>, double> read_bandwidth;  // (MiB, threads) -> GB/s
    std::map<std::pair<int, int>, double> stream_bandwidth;  // (MiB, threads) -> GB/s
    // NAME/THREADS/MIB/real_time -> (MiB, threads)
    auto size_and_threads = [](const std::string& name, size_t prefix) {
        const size_t slash = name.find('/', prefix);
        return std::pair{std::stoi(name.substr(slash + 1)), std::stoi(name.substr(prefix))};
    };
    for (const auto& e : r.entries) {
        if (e.name.rfind("triad/", 0) == 0) {
            bandwidth[size_and_threads(e.name, 6)] = e.bytes_per_second / 1e9;
        } else if (e.name.rfind("read/", 0) == 0) {
            read_bandwidth[size_and_threads(e.name, 5)] = e.bytes_per_second / 1e9;
        } else if (e.name.rfind("stream/", 0) == 0) {
            stream_bandwidth[size_and_threads(e.name, 7)] = e.bytes_per_second / 1e9;
        } else {
            seconds[e.name] = e.seconds;
        }
    }
    CpuBackend& any = backend_for(1, std::max(0, g_fixtures[1].context));
    // The decode roofline reads what one token reads: for a mixture, its
    // experts_per_token experts of each layer, not all of them.
    const double weight_bytes = static_cast<double>(any.weights().active_matmul_bytes());
    std::printf("\n## Model: CPU forward -- tables\n\n");
    std::printf("SIMD path: %s, %s activations; %s. Weights read per forward by the matmuls: %.1f MB. "
                "KV cache %s, %zu bytes a token.\n\n",
                tf::cpu::kernels::isa_name(any.isa()), tf::cpu::kernels::activations_name(any.activations()),
                any.weights().summary().c_str(), weight_bytes / 1e6, tf::cpu::kernels::kv_type_name(any.kv_type()),
                any.kv_bytes_per_token());
    std::printf("| read (sum) of | threads | eight parts, GB/s | one stream, GB/s | best | decode roofline tok/s (weights / best) |\n"
                "|---|---|---|---|---|---|\n");
    for (auto [key, gbs] : read_bandwidth) {
        const auto stream = stream_bandwidth.find(key);
        const double streamed = stream == stream_bandwidth.end() ? 0.0 : stream->second, best = std::max(gbs, streamed);
        std::printf("| %d MiB | %d | %.1f | %.1f | %.1f | %.0f |\n", key.first, key.second, gbs, streamed, best,
                    best * 1e9 / weight_bytes);
    }
    std::printf("\n| llama-bench style | 1 thread | 2 threads |\n|---|---|---|\n");
    for (const char* test : {"prefill", "decode"}) {
        if (std::strcmp(test, "prefill") == 0) {
            std::printf("| pp%d (%s) |", g_prefill_tokens,
                        g_prefill_tokens <= kPrefillChunk ? "one forward" : "forwards of 512 rows");
        } else {
            std::printf("| tg128 (128 one-row forwards) |");
        }
        for (int threads : {1, 2}) {
            auto it = seconds.find(std::string(test) + "/" + std::to_string(threads) + "/real_time");
            if (it == seconds.end()) {
                std::printf(" - |");
                continue;
            }
            const double tokens = std::strcmp(test, "prefill") == 0 ? g_prefill_tokens : 128;
            std::printf(" %.0f tok/s |", tokens / it->second);
        }
        std::printf("\n");
    }
    std::printf("\n");
    std::printf("| triad arrays | threads | GB/s | roofline tok/s (weights / bandwidth) |\n|---|---|---|---|\n");
    for (auto [key, gbs] : bandwidth) {
        std::printf("| 3 x %d MiB | %d | %.1f | %.0f |\n", key.first, key.second, gbs, gbs * 1e9 / weight_bytes);
    }
    for (int threads : {1, 2}) {
        std::printf("\n%d thread%s: forward time (ms), tokens/s, cost(M)/cost(1)\n\n", threads, threads > 1 ? "s" : "");
        auto key = [&](int32_t m, int context, int streams) {
            return "forward/" + std::to_string(m) + "/" + std::to_string(context) + "/" + std::to_string(streams) + "/" +
                   std::to_string(threads) + "/real_time";
        };
        // Only the (context, streams) columns that ran.
        std::vector<std::pair<int, int>> columns;
        for (int context : kContexts)
            for (int streams : {1, 8})
                if (seconds.count(key(1, context, streams))) columns.emplace_back(context, streams);
        std::printf("| M |");
        for (auto [context, streams] : columns) std::printf(" ctx %d, %d stream%s |", context, streams, streams > 1 ? "s" : "");
        std::printf("\n|---|");
        for (size_t i = 0; i < columns.size(); ++i) std::printf("---|");
        std::printf("\n");
        for (int32_t M : kRowsList) {
            std::printf("| %d |", M);
            for (auto [context, streams] : columns) {
                auto it = seconds.find(key(M, context, streams)), one = seconds.find(key(1, context, streams));
                if (it == seconds.end() || one == seconds.end()) {
                    std::printf(" - |");
                    continue;
                }
                std::printf(" %.2f ms, %.0f tok/s, %.2fx |", it->second * 1e3, M / it->second, it->second / one->second);
            }
            std::printf("\n");
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<char*> args;
    for (int i = 0; i < argc; ++i) {
        if (std::strncmp(argv[i], "--model=", 8) == 0) {
            g_model_dir = argv[i] + 8;
        } else if (std::strncmp(argv[i], "--quantize=", 11) == 0) {
            g_quantize = tf::model::parse_quant_type(argv[i] + 11);
        } else if (std::strncmp(argv[i], "--kv-type=", 10) == 0) {
            g_kv_type = tf::cpu::kernels::parse_kv_type(argv[i] + 10);
        } else if (std::strncmp(argv[i], "--prefill-tokens=", 17) == 0) {
            g_prefill_tokens = std::max(1, std::atoi(argv[i] + 17));
        } else {
            args.push_back(argv[i]);
        }
    }
    int count = static_cast<int>(args.size());
    benchmark::Initialize(&count, args.data());
    // Bandwidth: a DRAM-sized and a cache-sized array, on 1 and 2 threads.
    for (auto [name, fn, dram_mib, cache_mib] : {std::tuple{"read", &read_sum, 1024, 16}, std::tuple{"stream", &read_stream, 1024, 16},
                                                 std::tuple{"triad", &triad, 256, 8}}) {
        benchmark::RegisterBenchmark(name, fn)
            ->ArgsProduct({{1, 2}, {dram_mib, cache_mib}})
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
    }
    for (int threads : {1, 2}) {
        benchmark::RegisterBenchmark("prefill", prefill)->Arg(threads)->UseRealTime()->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark("decode", decode)->Arg(threads)->UseRealTime()->Unit(benchmark::kMillisecond);
    }
    for (int threads : {1, 2}) {
        for (int context : kContexts) {
            for (int streams : {1, 8}) {
                for (int32_t M : context > kMostPrefilled ? std::vector<int32_t>(std::begin(kLongRowsList), std::end(kLongRowsList))
                                                          : std::vector<int32_t>(std::begin(kRowsList), std::end(kRowsList))) {
                    benchmark::RegisterBenchmark("forward", forward)
                        ->Args({M, context, streams, threads})
                        ->UseRealTime()
                        ->Unit(benchmark::kMillisecond);
                }
            }
        }
    }
    bool recurrent = false;
    try {
        recurrent = tf::model::load_model_config(g_model_dir).recurrent();
    } catch (const std::exception&) {  // a GGUF file has no config.json; none of those is recurrent
    }
    if (recurrent) {
        for (int threads : {1, 2}) {
            for (auto [M, kept] : {std::pair{16, 8}, {64, 0}, {64, 8}, {64, 32}, {64, 63}}) {
                // Iterations fixed: each runs an untimed forward of M rows, and
                // a rollback with nothing to replay times next to nothing.
                benchmark::RegisterBenchmark("rollback", rollback)
                    ->Args({M, kept, threads})
                    ->Iterations(3)
                    ->UseManualTime()
                    ->Unit(benchmark::kMillisecond);
            }
        }
        for (int32_t M : {16, 64}) {
            benchmark::RegisterBenchmark("snapshot_copies", snapshot_copies)
                ->Arg(M)
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
        }
    }
    TableReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    print_tables(reporter);
    benchmark::Shutdown();
    return 0;
}
