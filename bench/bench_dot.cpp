// bench-dot: the compute peak of this CPU for each inner instruction
// sequence the kernels use (bench/compute_peak.h), on 1 and 2 threads, and
// then every matmul path this CPU runs, by weight format and batch rows M,
// as GOP/s and as a fraction of the peak of the instruction that path is
// built on. Decode (M = 1) is bound by memory, not by this peak; the rows
// of a verify round or a prefill chunk should approach it. Last, the
// attention kernel on one thread: one kv head's query vectors (1, 2, 8 and
// 32: a decode row and rows of a verify round, two query heads a row as in
// Qwen3-0.6B) over 4096 and 16384 cached keys, by KV type, against the
// fp32 FMA peak. Between the two, the activation quantization of each
// packing this CPU runs, blocks a microsecond.
//
//   build/bench-dot [--seconds=S] [--threads=1,2] [--n=3072] [--k=1024] [--peaks-only] [--path=TEXT]
//                   [--attention-only]
//
// The matrix is N x K (3072 x 1024: the gate or up projection of the
// Qwen3-0.6B shape); ops count a multiply-add as 2.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/compute_peak.h"
#include "cpu/kernels/attention.h"
#include "cpu/kernels/isa.h"
#include "cpu/kernels/matmul.h"
#include "cpu/kernels/quant_matmul.h"
#include "cpu/kv_cache.h"
#include "cpu/thread_pool.h"
#include "model/quant_blocks.h"

namespace {

using namespace tf::cpu::kernels;
using tf::bench::measure_peak;
using tf::bench::peak_loops;
using tf::cpu::ThreadPool;

constexpr int32_t kRows[] = {1, 2, 4, 8, 16, 32, 64};

struct Options {
    double seconds = 0.2;
    std::vector<int> threads = {1, 2};
    int32_t n = 3072, k = 1024;
    bool peaks_only = false;
    bool attention_only = false;
    std::string path;  // only the paths whose name contains this
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&](const char* flag) -> const char* {
            const size_t len = std::strlen(flag);
            return arg.compare(0, len, flag) == 0 ? arg.c_str() + len : nullptr;
        };
        if (const char* v = value("--seconds=")) {
            o.seconds = std::atof(v);
        } else if (const char* v = value("--threads=")) {
            o.threads.clear();
            for (const char* p = v; *p;) {
                o.threads.push_back(std::atoi(p));
                while (*p && *p != ',') ++p;
                if (*p == ',') ++p;
            }
        } else if (const char* v = value("--n=")) {
            o.n = std::atoi(v);
        } else if (const char* v = value("--k=")) {
            o.k = std::atoi(v);
        } else if (const char* v = value("--path=")) {
            o.path = v;
        } else if (arg == "--peaks-only") {
            o.peaks_only = true;
        } else if (arg == "--attention-only") {
            o.attention_only = true;
        } else {
            std::fprintf(stderr, "bench-dot: unknown argument %s\n", arg.c_str());
            std::exit(2);
        }
    }
    if (o.seconds <= 0 || o.threads.empty() || o.n % 8 != 0 || o.k % 256 != 0) {
        std::fprintf(stderr, "bench-dot: --seconds > 0, --threads a list, --n a multiple of 8, --k of 256\n");
        std::exit(2);
    }
    return o;
}

struct AlignedFree {
    void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t[], AlignedFree>;
Buffer aligned(size_t bytes) { return Buffer(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64))); }

// A matrix in the layout its kernels read, from seeded random weights.
struct Matrix {
    Buffer data;
    WeightMatrix w;
};

Matrix quantized_matrix(tf::model::QuantType type, int32_t n, int32_t k) {
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    std::vector<float> row(k);
    const size_t row_bytes = tf::model::quant_row_bytes(type, k);
    std::vector<uint8_t> gguf(row_bytes * n);
    for (int32_t r = 0; r < n; ++r) {
        for (auto& v : row) v = dist(rng);
        tf::model::quantize_row(type, row.data(), k, gguf.data() + row_bytes * r);
    }
    Matrix m{aligned(quant_kernel_matrix_bytes(type, n, k)), {}};
    repack_quant(type, gguf.data(), n, k, m.data.get());
    m.w = {m.data.get(), weight_format(type), n, k, k};
    return m;
}

Matrix bf16_matrix(int32_t n, int32_t k) {
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    std::vector<uint16_t> rows(static_cast<size_t>(n) * k);
    for (auto& v : rows) v = activation_to_bf16(dist(rng));
    const int32_t stride = padded_k(k);
    Matrix m{aligned(static_cast<size_t>(tiled_rows(n)) * stride * 2), {}};
    std::memset(m.data.get(), 0, static_cast<size_t>(tiled_rows(n)) * stride * 2);
    tile_bf16_rows(rows.data(), k, k, stride, 0, n, reinterpret_cast<uint16_t*>(m.data.get()));
    m.w = {m.data.get(), WeightFormat::bf16_tiled, n, k, stride};
    return m;
}

// Calls of `once` a second of wall clock, over at least `seconds`.
template <class F>
double calls_per_second(const F& once, double seconds) {
    int64_t runs = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    do {
        once();
        ++runs;
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < seconds);
    return static_cast<double>(runs) / elapsed;
}

// Ops per second of `kernel` over M packed rows, on the pool's threads.
double matmul_rate(MatmulFn kernel, PackRowsFn pack, size_t row_bytes, const WeightMatrix& w, int32_t M,
                   ThreadPool& pool, double seconds) {
    std::mt19937 rng(11);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(M) * w.cols), out(static_cast<size_t>(M) * w.rows);
    for (auto& v : x) v = dist(rng);
    Buffer packed = aligned(row_bytes * M);
    pack(x.data(), M, w.cols, w.cols, packed.get());
    auto once = [&] { matmul(kernel, pool, packed.get(), M, {{&w, out.data(), w.rows}}); };
    once();  // warm: the weights into whatever cache holds them
    return 2.0 * M * w.rows * static_cast<double>(w.cols) * calls_per_second(once, seconds);
}

struct Path {
    std::string name;
    std::string peak;        // the PeakLoop it is measured against
    std::string small_peak;  // the one for the 4- to 6-bit formats where it differs (int16 sums)
    MatmulFn kernel;
    PackRowsFn pack;
    size_t row_bytes;
    bool quantized;
};

std::vector<Path> paths(int32_t k) {
    std::vector<Path> out;
    auto bf16_path = [&](Isa isa, Activations a, const char* name, const char* peak) {
        if (!isa_supported(isa)) return;
        const KernelTable& t = kernel_table(isa, a);
        out.push_back({name, peak, "", t.matmul, t.pack_rows, t.row_bytes(k), false});
    };
    // The scalar paths are the references every vector path equals; they
    // have no instruction peak of their own here, so no share is printed.
    bf16_path(Isa::scalar, Activations::f32, "scalar (bf16 weights, f32 activations)", "");
    bf16_path(Isa::avx2, Activations::f32, "avx2 (bf16 weights, f32 activations)", "VFMADD231PS ymm");
    bf16_path(Isa::avx512, Activations::f32, "avx512 (bf16 weights, f32 activations)", "VFMADD231PS zmm");
    bf16_path(Isa::avx512_bf16, Activations::bf16, "avx512-bf16 (bf16 weights and activations)", "VDPBF16PS zmm");
    auto quant_path = [&](Isa isa, bool vnni, const char* name, const char* peak, const char* small_peak) {
        if (!isa_supported(isa) || (vnni && !quant_vnni_supported(isa))) return;
        const QuantKernels& q = quant_kernels(isa, vnni);
        out.push_back({name, peak, small_peak, q.matmul, q.pack_rows, q.row_bytes(k), true});
    };
    // Without VNNI, the nibble and 6-bit formats sum their VPMADDUBSW pairs
    // in int16 and widen once per 8 (or 2): VPMADDUBSW alone bounds them.
    quant_path(Isa::scalar, false, "scalar int8", "", "");
    quant_path(Isa::avx2, false, "avx2 int8", "VPMADDUBSW+VPMADDWD ymm", "VPMADDUBSW+VPADDW ymm");
    quant_path(Isa::avx2, true, "avx2 int8 AVX-VNNI", "VPDPBUSD ymm (AVX-VNNI)", "");
    quant_path(Isa::avx512, false, "avx512 int8", "VPMADDUBSW+VPMADDWD zmm", "VPMADDUBSW+VPADDW zmm");
    quant_path(Isa::avx512, true, "avx512 int8 AVX512-VNNI", "VPDPBUSD zmm (AVX512-VNNI)", "");
    return out;
}

// FMA ops (a multiply-add counted as 2) per second of one attention call
// over `keys` cached keys for `vectors` query vectors of one kv head, as a
// verify round's rows (two vectors a row, the rows at the last positions).
double attention_rate(Isa isa, KvType type, int32_t vectors, int32_t keys, double seconds) {
    constexpr int32_t head_dim = 128;
    tf::cpu::KvCache cache(1, 1, head_dim, keys, type);
    std::mt19937 rng(5);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> k(head_dim), v(head_dim), q(static_cast<size_t>(vectors) * head_dim),
        out(static_cast<size_t>(vectors) * head_dim);
    for (int32_t j = 0; j < keys; ++j) {
        for (int32_t d = 0; d < head_dim; ++d) k[d] = dist(rng), v[d] = dist(rng);
        cache.write(0, j, k.data(), v.data());
    }
    for (float& x : q) x = dist(rng);
    std::vector<AttentionQuery> queries;
    const int32_t rows = (vectors + 1) / 2;
    for (int32_t i = 0; i < vectors; ++i)
        queries.push_back({q.data() + i * head_dim, out.data() + i * head_dim, keys - rows + i / 2});
    auto once = [&] {
        attention_queries(isa, queries.data(), vectors, cache.keys(0), cache.values(0), 0, head_dim, 0.088f, type);
    };
    // The thread's CPU time, not the wall clock: on one thread the kernel's
    // rate is what counts, not the time other processes take the core.
    auto cpu_seconds = [] {
        timespec t{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
    };
    once();
    int64_t runs = 0;
    const double start = cpu_seconds();
    double elapsed = 0;
    do {
        once();
        ++runs;
        elapsed = cpu_seconds() - start;
    } while (elapsed < seconds);
    return 4.0 * vectors * static_cast<double>(keys) * head_dim * runs / elapsed;
}

// Activation quantization (the int8 paths' pack_rows): 64 rows of K, on one
// thread, as blocks of 32 a microsecond. It runs once per matmul input, so
// at M = 16-64 it is a per-row cost beside the matmuls.
void print_packing(int32_t k, double seconds) {
    std::printf("\n## Activation quantization, one thread: blocks of 32 per microsecond (64 rows of K = %d)\n\n", k);
    std::printf("| packing | blocks/us |\n|---|---|\n");
    constexpr int32_t kRowsPacked = 64;
    std::mt19937 rng(13);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(kRowsPacked) * k);
    for (auto& v : x) v = dist(rng);
    Buffer packed = aligned(quant_activation_row_bytes(k) * kRowsPacked);
    struct Packing {
        const char* name;
        Isa needs;
        PackRowsFn pack;
    };
    for (const Packing& p : {Packing{"scalar", Isa::scalar, &pack_rows_quant},
                             Packing{"avx2", Isa::avx2, &pack_rows_quant_avx2},
                             Packing{"avx512", Isa::avx512, &pack_rows_quant_avx512}}) {
        if (!isa_supported(p.needs)) {
            std::printf("| %s | not on this CPU |\n", p.name);
            continue;
        }
        const double packs = calls_per_second([&] { p.pack(x.data(), kRowsPacked, k, k, packed.get()); }, seconds);
        std::printf("| %s | %.1f |\n", p.name, packs * kRowsPacked * (k / 32) / 1e6);
    }
}

void print_attention(const std::map<std::string, std::map<int, double>>& peak, double seconds) {
    constexpr int32_t kVectors[] = {1, 2, 8, 32};
    constexpr int32_t kKeys[] = {4096, 16384};
    std::printf(
        "\n## Attention, one thread: GFLOP/s and %% of the fp32 FMA peak, by query vectors and keys\n\n"
        "| path | KV |");
    for (int32_t keys : kKeys)
        for (int32_t n : kVectors) std::printf(" %d x %d |", n, keys);
    std::printf("\n|---|---|");
    for (size_t i = 0; i < std::size(kKeys) * std::size(kVectors); ++i) std::printf("---|");
    std::printf("\n");
    const std::pair<Isa, const char*> isas[] = {{Isa::avx2, "VFMADD231PS ymm"}, {Isa::avx512, "VFMADD231PS zmm"}};
    for (const auto& [isa, loop] : isas) {
        if (!isa_supported(isa)) continue;
        double limit = 0;  // the one-thread peak, when --threads measured it
        if (const auto found = peak.find(loop); found != peak.end()) {
            if (const auto one = found->second.find(1); one != found->second.end()) limit = one->second;
        }
        for (KvType type : {KvType::f32, KvType::f16, KvType::q8_0}) {
            std::printf("| %s | %s |", isa_name(isa), kv_type_name(type));
            for (int32_t keys : kKeys) {
                for (int32_t n : kVectors) {
                    const double rate = attention_rate(isa, type, n, keys, seconds);
                    if (limit > 0)
                        std::printf(" %.1f (%.0f%%) |", rate / 1e9, 100.0 * rate / limit);
                    else
                        std::printf(" %.1f |", rate / 1e9);
                    std::fflush(stdout);
                }
            }
            std::printf("\n");
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    std::printf(
        "## Compute peak per instruction sequence (independent chains, so the issue rate bounds it)\n\n| sequence |");
    for (int t : o.threads) std::printf(" %d thread%s |", t, t == 1 ? "" : "s");
    std::printf("\n|---|");
    for (size_t i = 0; i < o.threads.size(); ++i) std::printf("---|");
    std::printf("\n");
    std::map<std::string, std::map<int, double>> peak;  // loop -> threads -> ops/s
    for (const auto& loop : peak_loops()) {
        if (o.attention_only && loop.name.rfind("VFMADD231PS", 0) != 0) continue;
        std::printf("| %s |", loop.name.c_str());
        if (!loop.supported()) {
            for (size_t i = 0; i < o.threads.size(); ++i) std::printf(" not on this CPU |");
            std::printf("\n");
            continue;
        }
        for (int t : o.threads) {
            peak[loop.name][t] = measure_peak(loop, t, o.seconds);
            std::printf(" %.1f %s |", peak[loop.name][t] / 1e9, loop.unit.c_str());
        }
        std::printf("\n");
        std::fflush(stdout);
    }
    if (o.peaks_only) return 0;
    if (o.attention_only) {
        print_attention(peak, o.seconds);
        return 0;
    }

    std::printf("\n## Matmul %d x %d: GOP/s and %% of the path's peak, by rows M\n", o.n, o.k);
    const std::vector<Path> all = paths(o.k);
    for (int threads : o.threads) {
        ThreadPool pool(threads);
        std::printf("\n%d thread%s\n\n| path | weights |", threads, threads == 1 ? "" : "s");
        for (int32_t m : kRows) std::printf(" M=%d |", m);
        std::printf("\n|---|---|");
        for (size_t i = 0; i < std::size(kRows); ++i) std::printf("---|");
        std::printf("\n");
        for (const Path& p : all) {
            if (p.name.find(o.path) == std::string::npos) continue;
            std::vector<std::pair<std::string, Matrix>> matrices;
            if (p.quantized) {
                for (auto type : {tf::model::QuantType::q8_0, tf::model::QuantType::q4_0, tf::model::QuantType::q4_k,
                                  tf::model::QuantType::q6_k, tf::model::QuantType::q5_k, tf::model::QuantType::q5_0})
                    matrices.emplace_back(tf::model::quant_type_name(type), quantized_matrix(type, o.n, o.k));
            } else {
                matrices.emplace_back("bf16", bf16_matrix(o.n, o.k));
            }
            for (const auto& [format, m] : matrices) {
                const bool small = !p.small_peak.empty() && format != "q8_0";
                const double limit = peak[small ? p.small_peak : p.peak][threads];
                std::printf("| %s | %s |", p.name.c_str(), format.c_str());
                for (int32_t rows : kRows) {
                    const double rate = matmul_rate(p.kernel, p.pack, p.row_bytes, m.w, rows, pool, o.seconds);
                    if (limit > 0)
                        std::printf(" %.0f (%.0f%%) |", rate / 1e9, 100.0 * rate / limit);
                    else
                        std::printf(" %.1f |", rate / 1e9);
                    std::fflush(stdout);
                }
                std::printf("\n");
            }
        }
    }
    print_packing(o.k, o.seconds);
    print_attention(peak, o.seconds);
    return 0;
}
