// bench-gpu: the CUDA backend's speed on one device, as Markdown tables.
//  1. device-to-device copy bandwidth (the memory roofline);
//  2. our batch-invariant GEMM against cuBLAS (bf16 in, fp32 accumulate)
//     on Qwen3-8B-shaped weights (random bf16), M = 1..512 rows (powers of two): time,
//     cost(M) / cost(1), weight bytes read per second against the copy
//     bandwidth;
//  3. whole forward rounds of tinycode (or MODEL_DIR) at 1, 16 and 64 rows,
//     and verify rounds of one stream at 1..64 rows (cost(M)/cost(1) of a
//     whole forward).
// Each part runs on even when another failed (its error is printed in its
// place); a failed cuBLAS call prints n/a in its cells. Exit status 1 when a
// part failed, 2 without a device.
//
// cuBLAS is only a reference here and is loaded at run time (dlopen of
// libcublas.so.13, .12, or $TF_CUBLAS): the library is half a gigabyte with
// cublasLt, too large to travel with the binary, so without it the table
// says "n/a" and the rest still runs.
//
// Usage: bench-gpu [MODEL_DIR]   (default: $TF_SOURCE_DIR/models/tinycode)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/check.h"
#include "gpu/cuda_backend.h"
#include "gpu/device.h"
#include "gpu/kernels/launch.h"

namespace {

using tf::gpu::kernels::bf16_bits;

// Median milliseconds of `reps` runs of f on `stream`, after one warm-up.
double time_ms(cudaStream_t stream, int reps, const std::function<void()>& f) {
    cudaEvent_t begin, end;
    TF_CUDA_CHECK(cudaEventCreate(&begin));
    TF_CUDA_CHECK(cudaEventCreate(&end));
    f();
    TF_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<float> ms;
    for (int i = 0; i < reps; ++i) {
        TF_CUDA_CHECK(cudaEventRecord(begin, stream));
        f();
        TF_CUDA_CHECK(cudaEventRecord(end, stream));
        TF_CUDA_CHECK(cudaEventSynchronize(end));
        float t = 0;
        TF_CUDA_CHECK(cudaEventElapsedTime(&t, begin, end));
        ms.push_back(t);
    }
    cudaEventDestroy(begin);
    cudaEventDestroy(end);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

struct Cublas {
    using Create = cublasStatus_t (*)(cublasHandle_t*);
    using Destroy = cublasStatus_t (*)(cublasHandle_t);
    using SetStream = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
    using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                      const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                      cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
    void* library = nullptr;
    cublasHandle_t handle = nullptr;
    Destroy destroy = nullptr;
    GemmEx gemm_ex = nullptr;
    std::string why;

    explicit Cublas(cudaStream_t stream) {
        std::vector<std::string> names;
        if (const char* forced = std::getenv("TF_CUBLAS")) names.emplace_back(forced);
        names.insert(names.end(), {"libcublas.so.13", "libcublas.so.12", "libcublas.so"});
        for (const std::string& name : names) {
            library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (library) break;
            why = dlerror();
        }
        if (!library) return;
        auto create = reinterpret_cast<Create>(dlsym(library, "cublasCreate_v2"));
        auto set_stream = reinterpret_cast<SetStream>(dlsym(library, "cublasSetStream_v2"));
        destroy = reinterpret_cast<Destroy>(dlsym(library, "cublasDestroy_v2"));
        gemm_ex = reinterpret_cast<GemmEx>(dlsym(library, "cublasGemmEx"));
        if (!create || !set_stream || !destroy || !gemm_ex) {
            why = "a cuBLAS entry point is missing";
            gemm_ex = nullptr;
            return;
        }
        if (create(&handle) != CUBLAS_STATUS_SUCCESS || set_stream(handle, stream) != CUBLAS_STATUS_SUCCESS) {
            why = "cublasCreate failed";
            gemm_ex = nullptr;
        }
    }
    ~Cublas() {
        if (handle && destroy) destroy(handle);
    }
    bool available() const { return gemm_ex != nullptr; }

    // y[m, n] = x[m, k] · w[n, k]ᵀ, all row-major: in cuBLAS's column-major
    // terms yᵀ (n x m) = w (k x n stored, transposed) · xᵀ (k x m).
    // The status of the call; bench-gpu reports a failure as n/a and goes on.
    cublasStatus_t gemm(const bf16_bits* x, const bf16_bits* w, float* y, int m, int n, int k) const {
        const float one = 1.0f, zero = 0.0f;
        return gemm_ex(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, CUDA_R_16BF, k, x, CUDA_R_16BF, k, &zero, y,
                       CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
};

// Random bf16 values in [-1, 1) on the device.
void fill_random(bf16_bits* device, size_t count, uint32_t seed) {
    constexpr size_t kChunk = size_t{1} << 24;
    std::vector<bf16_bits> host(std::min(count, kChunk));
    std::mt19937 rng(seed);
    for (bf16_bits& v : host) {
        // sign, exponent 126 or below (|v| < 1), random mantissa
        v = static_cast<bf16_bits>(((rng() & 1u) << 15) | ((118u + rng() % 9u) << 7) | (rng() & 0x7fu));
    }
    for (size_t at = 0; at < count; at += host.size()) {
        const size_t n = std::min(host.size(), count - at);
        TF_CUDA_CHECK(cudaMemcpy(device + at, host.data(), n * 2, cudaMemcpyHostToDevice));
    }
}

double copy_bandwidth(cudaStream_t stream) {
    const size_t bytes = size_t{1} << 30;
    void *a = nullptr, *b = nullptr;
    TF_CUDA_CHECK(cudaMalloc(&a, bytes));
    TF_CUDA_CHECK(cudaMalloc(&b, bytes));
    TF_CUDA_CHECK(cudaMemset(a, 1, bytes));
    const double ms = time_ms(stream, 10, [&] { TF_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream)); });
    cudaFree(a);
    cudaFree(b);
    return 2.0 * bytes / (ms * 1e-3) / 1e9;  // read + write
}

void gemm_table(cudaStream_t stream, double copy_gbs) {
    struct Shape {
        const char* name;
        int n, k;
    };
    const std::vector<Shape> shapes = {{"q_proj / o_proj", 4096, 4096}, {"k_proj / v_proj", 1024, 4096},
                                       {"gate_proj / up_proj", 12288, 4096}, {"down_proj", 4096, 12288},
                                       {"lm_head", 151936, 4096}};
    const std::vector<int> ms_rows = {1, 2, 4, 8, 16, 32, 64, 128, 512};
    Cublas cublas(stream);
    int failures = 0;
    std::printf("\n## GEMM: ours (one tile shape, no split-K) vs cuBLAS, bf16 in, fp32 accumulate\n\n");
    if (!cublas.available()) std::printf("cuBLAS not loaded (%s): its columns say n/a.\n\n", cublas.why.c_str());
    std::printf("| weight [N, K] | M | ours ms | cost(M)/cost(1) | ours GB/s | %% of copy | cuBLAS ms | cuBLAS GB/s | ours / cuBLAS |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    const int max_m = ms_rows.back();
    for (const Shape& s : shapes) {
        bf16_bits *w = nullptr, *x = nullptr;
        float* y = nullptr;
        TF_CUDA_CHECK(cudaMalloc(&w, static_cast<size_t>(s.n) * s.k * 2));
        TF_CUDA_CHECK(cudaMalloc(&x, static_cast<size_t>(max_m) * s.k * 2));
        TF_CUDA_CHECK(cudaMalloc(&y, static_cast<size_t>(max_m) * s.n * 4));
        fill_random(w, static_cast<size_t>(s.n) * s.k, 1);
        fill_random(x, static_cast<size_t>(max_m) * s.k, 2);
        const double weight_bytes = 2.0 * s.n * s.k;
        double ours_one = 0;
        for (int m : ms_rows) {
            tf::gpu::kernels::Gemm g;
            g.a = x, g.lda = s.k, g.w = w, g.ldw = s.k, g.y = y, g.ldy = s.n, g.m_rows = m, g.n_cols = s.n, g.k = s.k;
            const double ours = time_ms(stream, 20, [&] { tf::gpu::kernels::gemm(g, stream); });
            if (m == 1) ours_one = ours;
            const double ours_gbs = weight_bytes / (ours * 1e-3) / 1e9;
            std::printf("| %s [%d, %d] | %d | %.4f | %.2f | %.0f | %.0f%% |", s.name, s.n, s.k, m, ours, ours / ours_one,
                        ours_gbs, 100.0 * ours_gbs / copy_gbs);
            // One call first: a failing cuBLAS (no kernel for this card,
            // a library that does not match the driver) gives n/a, not an abort.
            const cublasStatus_t status =
                cublas.available() ? cublas.gemm(x, w, y, m, s.n, s.k) : CUBLAS_STATUS_NOT_INITIALIZED;
            if (cublas.available() && status == CUBLAS_STATUS_SUCCESS && cudaStreamSynchronize(stream) == cudaSuccess) {
                const double ref = time_ms(stream, 20, [&] { cublas.gemm(x, w, y, m, s.n, s.k); });
                std::printf(" %.4f | %.0f | %.2f |\n", ref, weight_bytes / (ref * 1e-3) / 1e9, ours / ref);
            } else {
                if (cublas.available() && failures++ == 0) {
                    std::fprintf(
                        stderr,
                        "bench-gpu: cublasGemmEx failed (status %d, %s) at M %d, N %d, K %d; its cells say n/a\n",
                        static_cast<int>(status), cudaGetErrorString(cudaGetLastError()), m, s.n, s.k);
                }
                std::printf(" n/a | n/a | n/a |\n");
            }
        }
        cudaFree(w);
        cudaFree(x);
        cudaFree(y);
    }
}

void forward_table(const std::string& dir) {
    tf::gpu::CudaOptions options;
    options.max_kv_tokens = 1 << 20;
    tf::gpu::CudaLoadInfo info;
    auto backend = tf::gpu::load_cuda_backend(dir, options, &info);
    const int32_t vocab = backend->config().vocab_size;
    std::printf("\n## Whole forward: %s (%s)\n\n", dir.c_str(), backend->config().architecture.c_str());
    std::printf("loaded in %.0f ms on %s: weights %.1f MiB, scratch %.1f MiB, KV pool %lld positions\n\n", info.load_ms,
                info.device_name.c_str(), info.weight_bytes / 1048576.0, info.scratch_bytes / 1048576.0,
                static_cast<long long>(info.kv_tokens));
    std::printf("| rows per round | context | ms per round (graph replay, greedy sampling on the device) | ms per row |\n");
    std::printf("|---:|---:|---:|---:|\n");
    constexpr int32_t kContext = 256, kRounds = 50;
    const std::vector<tf::model::SamplingParams> greedy = {{.temperature = 0.0f}};
    for (int32_t m : {1, 16, 64}) {
        std::vector<tf::model::Row> rows;
        for (int32_t s = 0; s < m; ++s) {
            backend->open_stream(s, kContext + kRounds + 8);
            for (int32_t p = 0; p < kContext; ++p) rows.push_back({s, p, (s * 31 + p * 7) % vocab});
        }
        std::vector<float> unused;
        backend->forward(rows, unused);  // prefill, also the warm-up
        tf::model::RowOutputs out;
        auto round = [&](int32_t r) {
            rows.clear();
            for (int32_t s = 0; s < m; ++s) rows.push_back({s, kContext + r, (s + r) % vocab, false, 0});
            backend->forward(rows, greedy, out);
        };
        round(0);  // captures the bucket's graph
        const auto started = std::chrono::steady_clock::now();
        for (int32_t r = 1; r <= kRounds; ++r) round(r);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count() / kRounds;
        std::printf("| %d | %d | %.3f | %.4f |\n", m, kContext, ms, ms / m);
        for (int32_t s = 0; s < m; ++s) backend->close_stream(s);
    }

    // Verify rounds: one stream checks a draft of k tokens, k + 1 rows in one
    // forward, each sampling its next token (what a Recall copy costs).
    std::printf(
        "\n| rows of one stream (1 + draft) | context | ms per round | cost(M)/cost(1) |\n|---:|---:|---:|---:|\n");
    const std::vector<tf::model::SamplingParams> one = {{.temperature = 0.0f}};
    double one_row_ms = 0;
    for (int32_t m : {1, 2, 4, 8, 16, 32, 64}) {
        backend->open_stream(0, kContext + 2 * 64 + 8);
        std::vector<tf::model::Row> rows;
        for (int32_t p = 0; p < kContext; ++p) rows.push_back({0, p, (p * 7) % vocab});
        std::vector<float> unused;
        backend->forward(rows, unused);
        tf::model::RowOutputs out;
        auto verify = [&] {
            rows.clear();
            for (int32_t i = 0; i < m; ++i) rows.push_back({0, kContext + i, (i * 13) % vocab, false, 0});
            backend->forward(rows, one, out);
            backend->truncate(0, kContext);  // the draft is thrown away; the next round checks the same positions
        };
        verify();  // captures the bucket's graph
        const auto started = std::chrono::steady_clock::now();
        for (int32_t r = 0; r < kRounds; ++r) verify();
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count() / kRounds;
        if (m == 1) one_row_ms = ms;
        std::printf("| %d | %d | %.3f | %.2f |\n", m, kContext, ms, ms / one_row_ms);
        backend->close_stream(0);
    }
}

}  // namespace

// Runs one part of the benchmark; a failure is printed and the next part
// still runs, so one broken table does not cost the others.
bool section(const char* name, const std::function<void()>& run) {
    try {
        run();
        return true;
    } catch (const std::exception& e) {
        std::printf("\n%s: failed: %s\n", name, e.what());
        std::fprintf(stderr, "bench-gpu: %s failed: %s\n", name, e.what());
        return false;
    }
}

int main(int argc, char** argv) {
    std::string dir;
    if (argc > 1) {
        dir = argv[1];
    } else {
        const char* source = std::getenv("TF_SOURCE_DIR");
        dir = std::string(source && *source ? source : TF_BENCH_SOURCE_DIR) + "/models/tinycode";
    }
    std::string why;
    const auto devices = tf::gpu::list_devices(&why);
    if (devices.empty()) {
        std::fprintf(stderr, "bench-gpu: no CUDA device: %s\n", why.c_str());
        return 2;
    }
    std::printf("# bench-gpu on %s (compute %d.%d, %.1f GiB)\n\n", devices[0].name.c_str(), devices[0].compute_major,
                devices[0].compute_minor, devices[0].memory_bytes / 1073741824.0);
    bool ok = true;
    cudaStream_t stream = nullptr;
    double copy_gbs = 0;
    ok &= section("copy bandwidth", [&] {
        TF_CUDA_CHECK(cudaSetDevice(0));
        TF_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        copy_gbs = copy_bandwidth(stream);
        std::printf("| measure | value |\n|---|---:|\n| device-to-device copy (read + write) | %.0f GB/s |\n", copy_gbs);
    });
    if (stream) {
        ok &= section("GEMM table", [&] { gemm_table(stream, copy_gbs); });
        cudaStreamDestroy(stream);
    }
    ok &= section("whole forward", [&] { forward_table(dir); });
    std::fflush(stdout);
    return ok ? 0 : 1;
}
