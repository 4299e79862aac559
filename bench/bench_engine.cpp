// bench-engine: the lane engine on tinycode, single stream, a 256-token reply,
// for three workloads (fresh, regenerated, an agent pasting its earlier code)
// with Recall off, on and read-only: tokens/s, rounds, landed per round, and
// whether the tokens are identical to plain decoding. Prints a Markdown table
// for docs/performance.md.
//
//   bench-engine [MODEL_DIR] [--threads N] [--tokens N] [--quantize q8_0|q4_0|q5_0|q4_k|q5_k|q6_k]
//                [--device cpu|cuda]
//
// --device cuda runs the same table on the CUDA backend (tools/gpu-check
// runs it with --tokens 512 for the GPU's Recall target).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "engine/calibrate.h"
#include "engine/engine.h"
#include "gpu/cuda_backend.h"
#include "recall/record.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace tf;
using Clock = std::chrono::steady_clock;

struct Run {
    std::vector<engine::TokenId> tokens;
    double seconds = 0;
    int64_t rounds = 0;
    engine::DraftCounters counters;
};

Run run_once(model::Backend& backend, const engine::CostCurve& cost, recall::Record* record, bool drafts,
             const engine::GenerationRequest& request) {
    engine::EngineOptions options;
    options.drafter.own_context = drafts;
    engine::Engine engine(backend, cost, options, nullptr, record);
    const auto start = Clock::now();
    engine::Completion c = engine.generate(request);
    Run run;
    run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    run.tokens = std::move(c.tokens);
    run.rounds = engine.total_rounds();
    run.counters = c.counters;
    return run;
}

std::unique_ptr<recall::Record> open_record(const std::filesystem::path& dir, bool read_only,
                                            const tokenizer::Tokenizer& tok) {
    recall::RecordOptions o;
    o.dir = dir.string();
    o.read_only = read_only;
    o.model = "tinycode";
    o.tokenizer = {tok.identity().digest_hex, tok.identity().vocab_size};
    o.min_free_bytes = 0;
    return recall::Record::open(o);
}

std::vector<engine::TokenId> encode(const tokenizer::Tokenizer& tok, const std::string& text) {
    auto ids = tok.encode(text);
    return {ids.begin(), ids.end()};
}

void row(const char* workload, const char* mode, const Run& run, const Run& plain) {
    const double landed_per_round =
        run.rounds > 0 ? static_cast<double>(run.tokens.size()) / static_cast<double>(run.rounds) : 0;
    std::printf("| %s | %s | %.0f | %lld | %.2f | %lld / %lld | %lld / %lld | %s |\n", workload, mode,
                static_cast<double>(run.tokens.size()) / run.seconds, static_cast<long long>(run.rounds),
                landed_per_round, static_cast<long long>(run.counters.own_landed),
                static_cast<long long>(run.counters.own_drafted), static_cast<long long>(run.counters.copy_landed),
                static_cast<long long>(run.counters.copy_drafted), run.tokens == plain.tokens ? "yes" : "NO");
}

}  // namespace

int main(int argc, char** argv) {
    std::string model_dir = TF_BENCH_DEFAULT_MODEL;
    int threads = 0, tokens = 256;
    std::string device = "cpu";
    cpu::WeightOptions weights;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
        else if (arg == "--tokens" && i + 1 < argc) tokens = std::atoi(argv[++i]);
        else if (arg == "--quantize" && i + 1 < argc)
            weights.quantize = model::parse_quant_type(argv[++i]);
        else if (arg == "--device" && i + 1 < argc) device = argv[++i];
        else model_dir = arg;
    }
    if (device != "cpu" && device != "cuda") {
        std::fprintf(stderr, "bench-engine: --device takes cpu or cuda, not %s\n", device.c_str());
        return 2;
    }
    std::unique_ptr<model::Backend> backend;
    if (device == "cuda") {
        gpu::CudaLoadInfo info;
        try {
            backend = gpu::load_cuda_backend(model_dir, gpu::CudaOptions{}, &info);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "bench-engine: --device cuda: %s\n", e.what());
            return 2;
        }
        std::printf("%s on %s: weights %.1f MiB, KV pool %lld positions\n", model_dir.c_str(), info.device_name.c_str(),
                    static_cast<double>(info.weight_bytes) / 1048576.0, static_cast<long long>(info.kv_tokens));
    } else {
        backend = cpu::load_cpu_backend(model_dir, threads, weights);
    }
    if (const auto* cpu_backend = dynamic_cast<const cpu::CpuBackend*>(backend.get()))
        std::printf("%s: %s\n", model_dir.c_str(), cpu_backend->weights().summary().c_str());
    auto tok = tokenizer::Tokenizer::load(model_dir);
    // The server's budget; up to 64 rows, so that the table below can show them.
    const engine::Calibration calibration = engine::measure_cost_curve(*backend);
    const engine::CostCurve& cost = calibration.curve;
    std::printf("cost curve (relative to 1 row): M=2 %.2f, 4 %.2f, 8 %.2f, 16 %.2f, 32 %.2f, 64 %.2f; %s in %.0f ms\n\n",
                cost.relative(2), cost.relative(4), cost.relative(8), cost.relative(16), cost.relative(32),
                cost.relative(64), calibration.summary().c_str(), calibration.seconds * 1000);

    engine::GenerationRequest request;
    request.prompt = encode(tok, "import numpy as np\n\n\nclass KalmanFilter:\n    def __init__(self, dim_x, dim_z):\n");
    request.sampling.temperature = 0.7f;
    request.sampling.seed = 1234;
    request.max_tokens = tokens;  // no stop tokens: every run writes the whole reply

    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("tf-bench-engine-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);

    std::printf("| workload | mode | tokens/s | rounds | tokens per round | own landed/drafted | copy landed/drafted | identical |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    const Run plain = run_once(*backend, cost, nullptr, false, request);
    row("fresh", "no drafts", plain, plain);
    row("fresh", "recall off", run_once(*backend, cost, nullptr, true, request), plain);
    auto writer = open_record(dir, false, tok);
    row("fresh", "recall on (empty record)", run_once(*backend, cost, writer.get(), true, request), plain);
    // The fresh run above added the prompt and its reply: the same request again.
    row("regenerated", "recall off", run_once(*backend, cost, nullptr, true, request), plain);
    row("regenerated", "recall on", run_once(*backend, cost, writer.get(), true, request), plain);
    writer.reset();
    {
        auto reader = open_record(dir, true, tok);
        row("regenerated", "recall read-only", run_once(*backend, cost, reader.get(), true, request), plain);
    }
    // An agent pastes the code it wrote and asks for it again.
    engine::GenerationRequest pasted = request;
    pasted.prompt = encode(tok, "# earlier version:\n");
    pasted.prompt.insert(pasted.prompt.end(), request.prompt.begin(), request.prompt.end());
    pasted.prompt.insert(pasted.prompt.end(), plain.tokens.begin(), plain.tokens.end());
    const std::vector<engine::TokenId> again = encode(tok, "\n\n# again:\n");
    pasted.prompt.insert(pasted.prompt.end(), again.begin(), again.end());
    pasted.prompt.insert(pasted.prompt.end(), request.prompt.begin(), request.prompt.end());
    const Run pasted_plain = run_once(*backend, cost, nullptr, false, pasted);
    row("agent pastes", "no drafts", pasted_plain, pasted_plain);
    row("agent pastes", "recall off", run_once(*backend, cost, nullptr, true, pasted), pasted_plain);
    {
        auto on = open_record(dir, false, tok);
        row("agent pastes", "recall on", run_once(*backend, cost, on.get(), true, pasted), pasted_plain);
    }
    std::filesystem::remove_all(dir);
    return 0;
}
