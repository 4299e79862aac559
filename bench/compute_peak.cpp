#include "bench/compute_peak.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "cpu/kernels/isa.h"

namespace tf::bench {

namespace {

constexpr int kChains = 12;
// The VPMADDUBSW loop on ymm: 8 sums, so that they, the inputs and the two
// products in flight fit 16 registers (12 spilled to the stack). The sum's
// chain is one VPADDD a step, so 8 are as many as the rate needs.
constexpr int kYmmIntChains = 8;

bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, int bit) {
    unsigned r[4] = {};
    if (!__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3])) return false;
    return (r[reg] >> bit) & 1;
}

// The input registers are "changed" by an empty asm between chains, so the
// compiler recomputes a product whose inputs never really change instead
// of hoisting it out of the loop; the asm itself emits nothing.
#define TF_OPAQUE(v) asm volatile("" : "+x"(v))

// kernels

__attribute__((target("avx2,fma"))) double fma_ymm(int64_t steps) {
    __m256 acc[kChains];
    for (auto& a : acc) a = _mm256_setzero_ps();
    const __m256 a = _mm256_set1_ps(1.0001f), b = _mm256_set1_ps(0.9999f);
    for (int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(a, b, acc[c]);
    }
    float lanes[8];
    __m256 sum = acc[0];
    for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
    _mm256_storeu_ps(lanes, sum);
    return lanes[0];
}

__attribute__((target("avx512f"))) double fma_zmm(int64_t steps) {
    __m512 acc[kChains];
    for (auto& a : acc) a = _mm512_setzero_ps();
    const __m512 a = _mm512_set1_ps(1.0001f), b = _mm512_set1_ps(0.9999f);
    for (int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(a, b, acc[c]);
    }
    __m512 sum = acc[0];
    for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);  // every chain, or the unused ones go
    float lanes[16];
    _mm512_storeu_ps(lanes, sum);
    return lanes[0];
}

__attribute__((target("avx512f,avx512bf16"))) double dpbf16_zmm(int64_t steps) {
    __m512 acc[kChains];
    for (auto& a : acc) a = _mm512_setzero_ps();
    const __m512i ones = _mm512_set1_epi32(0x3F803F80);  // bf16 pairs (1, 1)
    __m512bh a, b;
    std::memcpy(&a, &ones, sizeof a);
    std::memcpy(&b, &ones, sizeof b);
    for (int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
    }
    __m512 sum = acc[0];
    for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);  // every chain, or the unused ones go
    float lanes[16];
    _mm512_storeu_ps(lanes, sum);
    return lanes[0];
}

// The AVX2 kernels' u8 x s8 4-way dot without VNNI: VPMADDUBSW (pairs to
// int16), VPMADDWD against ones (pairs to int32), VPADDD into the sum.
__attribute__((target("avx2"))) double maddubs_ymm(int64_t steps) {
    __m256i acc[kYmmIntChains];
    for (auto& a : acc) a = _mm256_setzero_si256();
    __m256i u = _mm256_set1_epi8(3);
    const __m256i s = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kYmmIntChains; ++c) {
            TF_OPAQUE(u);
            acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones));
        }
    }
    __m256i sum = acc[0];
    for (int c = 1; c < kYmmIntChains; ++c) sum = _mm256_add_epi32(sum, acc[c]);
    return _mm256_extract_epi32(sum, 0);
}

__attribute__((target("avx512f,avx512bw"))) double maddubs_zmm(int64_t steps) {
    __m512i acc[kChains];
    for (auto& a : acc) a = _mm512_setzero_si512();
    __m512i u = _mm512_set1_epi8(3);
    const __m512i s = _mm512_set1_epi8(-2), ones = _mm512_set1_epi16(1);
    for (int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) {
            TF_OPAQUE(u);
            acc[c] = _mm512_add_epi32(acc[c], _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), ones));
        }
    }
    __m512i sum = acc[0];
    for (int c = 1; c < kChains; ++c) sum = _mm512_add_epi32(sum, acc[c]);
    int32_t lanes[16];
    _mm512_storeu_si512(lanes, sum);
    return lanes[0];
}

// The nibble and 6-bit formats' sequence without VNNI: VPMADDUBSW pairs
// summed in int16 (VPADDW), one VPMADDWD per 8 (or 2) of them, so the
// multiply-add itself bounds the rate. The step counts one VPMADDUBSW.
__attribute__((target("avx2"))) double maddubs_addw_ymm(int64_t steps) {
    __m256i acc[kYmmIntChains];
    for (auto& a : acc) a = _mm256_setzero_si256();
    __m256i u = _mm256_set1_epi8(3);
    const __m256i s = _mm256_set1_epi8(-2);
    for (int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kYmmIntChains; ++c) {
            TF_OPAQUE(u);
            acc[c] = _mm256_add_epi16(acc[c], _mm256_maddubs_epi16(u, s));
        }
    }
    __m256i sum = acc[0];
    for (int c = 1; c < kYmmIntChains; ++c) sum = _mm256_add_epi16(sum, acc[c]);
    return static_cast<int16_t>(_mm256_extract_epi16(sum, 0));
}

__attribute__((target("avx512f,avx512bw"))) double maddubs_addw_zmm(int64_t steps) {
    __m512i acc[kChains];
    for (auto& a : acc) a = _mm512_setzero_si512();
    __m512i u = _mm512_set1_epi8(3);
    const __m512i s = _mm512_set1_epi8(-2);
    for (int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) {
            TF_OPAQUE(u);
            acc[c] = _mm512_add_epi16(acc[c], _mm512_maddubs_epi16(u, s));
        }
    }
    __m512i sum = acc[0];
    for (int c = 1; c < kChains; ++c) sum = _mm512_add_epi16(sum, acc[c]);
    int16_t lanes[32];
    _mm512_storeu_si512(lanes, sum);
    return lanes[0];
}

// In asm: GCC 12 copies the accumulators of the VEX-encoded VPDPBUSD
// around the loop (its destination is also a source), which halves the
// rate a plain intrinsic loop reports.
__attribute__((target("avx2,avxvnni"))) double dpbusd_ymm(int64_t steps) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
            a9 = a0, a10 = a0, a11 = a0;
    const __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-2);
    for (int64_t i = 0; i < steps; ++i) {
        asm("%{vex%} vpdpbusd %[s], %[u], %[a0]\n\t%{vex%} vpdpbusd %[s], %[u], %[a1]\n\t"
            "%{vex%} vpdpbusd %[s], %[u], %[a2]\n\t%{vex%} vpdpbusd %[s], %[u], %[a3]\n\t"
            "%{vex%} vpdpbusd %[s], %[u], %[a4]\n\t%{vex%} vpdpbusd %[s], %[u], %[a5]\n\t"
            "%{vex%} vpdpbusd %[s], %[u], %[a6]\n\t%{vex%} vpdpbusd %[s], %[u], %[a7]\n\t"
            "%{vex%} vpdpbusd %[s], %[u], %[a8]\n\t%{vex%} vpdpbusd %[s], %[u], %[a9]\n\t"
            "%{vex%} vpdpbusd %[s], %[u], %[a10]\n\t%{vex%} vpdpbusd %[s], %[u], %[a11]"
            : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4), [a5] "+x"(a5), [a6] "+x"(a6),
              [a7] "+x"(a7), [a8] "+x"(a8), [a9] "+x"(a9), [a10] "+x"(a10), [a11] "+x"(a11)
            : [u] "x"(u), [s] "x"(s));
    }
    const __m256i sum =
        _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)),
                                          _mm256_add_epi32(_mm256_add_epi32(a4, a5), _mm256_add_epi32(a6, a7))),
                         _mm256_add_epi32(_mm256_add_epi32(a8, a9), _mm256_add_epi32(a10, a11)));
    return _mm256_extract_epi32(sum, 0);
}

__attribute__((target("avx512f,avx512vnni"))) double dpbusd_zmm(int64_t steps) {
    __m512i acc[kChains];
    for (auto& a : acc) a = _mm512_setzero_si512();
    const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
    for (int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], u, s);
    }
    __m512i sum = acc[0];
    for (int c = 1; c < kChains; ++c) sum = _mm512_add_epi32(sum, acc[c]);
    int32_t lanes[16];
    _mm512_storeu_si512(lanes, sum);
    return lanes[0];
}

// AMX: tiles 0-3 accumulate (16 rows x 64 bytes), tile 4 is A (16 x 64),
// tile 5 is B (16 rows of 4-element groups); one instruction is 16 x 16
// outputs over K = 64 (int8) or 32 (bf16).
struct TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

TileConfig amx_config() {
    TileConfig c;
    for (int t = 0; t < 6; ++t) c.colsb[t] = 64, c.rows[t] = 16;
    return c;
}

// Linux hands out the AMX tile state only to a process that asks for it.
bool amx_permitted() {
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    static const bool permitted = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
    return permitted;
}

// Loads the configuration, zeroes the four accumulators and loads A and B
// from `input` (16 rows of 64 bytes).
__attribute__((target("amx-tile"))) void amx_begin(const void* input) {
    const TileConfig config = amx_config();
    _tile_loadconfig(&config);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, input, 64);
    _tile_loadd(5, input, 64);
}

// The first 4 bytes of accumulator 3 (the loop's result), and the tiles
// handed back.
__attribute__((target("amx-tile"))) double amx_finish() {
    alignas(64) int32_t out[16 * 16];
    _tile_stored(3, out, 64);
    _tile_release();
    return out[0];
}

__attribute__((target("amx-tile,amx-int8"))) double amx_int8(int64_t steps) {
    alignas(64) int8_t input[16 * 64];
    std::memset(input, 1, sizeof input);
    amx_begin(input);
    for (int64_t i = 0; i < steps; ++i) {
        _tile_dpbusd(0, 4, 5);
        _tile_dpbusd(1, 4, 5);
        _tile_dpbusd(2, 4, 5);
        _tile_dpbusd(3, 4, 5);
    }
    return amx_finish();
}

__attribute__((target("amx-tile,amx-bf16"))) double amx_bf16(int64_t steps) {
    alignas(64) uint16_t input[16 * 32];
    for (auto& v : input) v = 0x3F80;  // bf16 1.0
    amx_begin(input);
    for (int64_t i = 0; i < steps; ++i) {
        _tile_dpbf16ps(0, 4, 5);
        _tile_dpbf16ps(1, 4, 5);
        _tile_dpbf16ps(2, 4, 5);
        _tile_dpbf16ps(3, 4, 5);
    }
    return amx_finish();
}

// launchers

using cpu::kernels::Isa;
namespace kernels = cpu::kernels;

bool has_avx2() { return kernels::isa_supported(Isa::avx2); }
bool has_avx512() { return kernels::isa_supported(Isa::avx512); }
bool has_avx512_bf16() { return kernels::isa_supported(Isa::avx512_bf16); }
bool has_avx_vnni() { return has_avx2() && cpuid_bit(7, 1, 0, 4); }        // CPUID.(7,1):EAX[4]
bool has_avx512_vnni() { return has_avx512() && cpuid_bit(7, 0, 2, 11); }  // CPUID.7:ECX[11]
bool has_amx_int8() { return cpuid_bit(7, 0, 3, 24) && cpuid_bit(7, 0, 3, 25) && amx_permitted(); }
bool has_amx_bf16() { return cpuid_bit(7, 0, 3, 24) && cpuid_bit(7, 0, 3, 22) && amx_permitted(); }

}  // namespace

const std::vector<PeakLoop>& peak_loops() {
    static const std::vector<PeakLoop> loops = {
        {"VFMADD231PS ymm", "GFLOP/s", kChains * 8 * 2, &has_avx2, &fma_ymm},
        {"VFMADD231PS zmm", "GFLOP/s", kChains * 16 * 2, &has_avx512, &fma_zmm},
        {"VDPBF16PS zmm", "GFLOP/s", kChains * 32 * 2, &has_avx512_bf16, &dpbf16_zmm},
        {"VPMADDUBSW+VPMADDWD ymm", "GOP/s", kYmmIntChains * 32 * 2, &has_avx2, &maddubs_ymm},
        {"VPMADDUBSW+VPMADDWD zmm", "GOP/s", kChains * 64 * 2, &has_avx512, &maddubs_zmm},
        {"VPMADDUBSW+VPADDW ymm", "GOP/s", kYmmIntChains * 32 * 2, &has_avx2, &maddubs_addw_ymm},
        {"VPMADDUBSW+VPADDW zmm", "GOP/s", kChains * 64 * 2, &has_avx512, &maddubs_addw_zmm},
        {"VPDPBUSD ymm (AVX-VNNI)", "GOP/s", kChains * 32 * 2, &has_avx_vnni, &dpbusd_ymm},
        {"VPDPBUSD zmm (AVX512-VNNI)", "GOP/s", kChains * 64 * 2, &has_avx512_vnni, &dpbusd_zmm},
        {"AMX TDPBUSD", "GOP/s", 4 * 16 * 16 * 64 * 2, &has_amx_int8, &amx_int8},
        {"AMX TDPBF16PS", "GFLOP/s", 4 * 16 * 16 * 32 * 2, &has_amx_bf16, &amx_bf16},
    };
    return loops;
}

double measure_peak(const PeakLoop& loop, int threads, double seconds) {
    // Size the run from a short probe on one thread.
    const int64_t probe_steps = 200'000;
    auto t0 = std::chrono::steady_clock::now();
    volatile double sink = loop.run(probe_steps);
    const double probe = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto steps = static_cast<int64_t>(probe_steps * seconds / (probe > 1e-6 ? probe : 1e-6));

    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) {
            }
            sink = loop.run(steps);
        });
    }
    while (ready.load() < threads) {
    }
    const auto start = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    for (auto& th : pool) th.join();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    (void)sink;
    return static_cast<double>(steps) * loop.ops_per_step * threads / elapsed;
}

}  // namespace tf::bench
