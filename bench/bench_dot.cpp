// bench-dot: how many multiply-adds a second one core gets from the fp32 FMA
// (VFMADD231PS zmm, 16 per instruction) and from the bf16 dot product
// (VDPBF16PS zmm, 32 per instruction), each as 12 independent chains so
// the instruction rate, not its latency, is the limit. Whether the
// avx512-bf16 kernel path can beat avx512 on a CPU follows from this ratio.
// Built with -mavx512f -mavx512bf16 (a CPU without AVX-512 cannot run it);
// runs the bf16 loop only where the instruction runs (kernels::isa_supported).
//
//   build/bench-dot
#include <immintrin.h>

#include <chrono>
#include <cstdio>

#include "cpu/kernels/isa.h"

namespace {

constexpr long kIterations = 50'000'000;
constexpr int kChains = 12;

template <class Step>
double instructions_per_second(Step step) {
    __m512 acc[kChains];
    for (auto& a : acc) a = _mm512_setzero_ps();
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < kIterations; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = step(acc[c]);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    float sink[16];
    __m512 sum = acc[0];
    for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
    _mm512_storeu_ps(sink, sum);
    std::printf("%s", sink[0] == -1.0f ? " " : "");  // keeps the loop
    return kIterations * kChains / seconds;
}

double fma_rate() {
    const __m512 a = _mm512_set1_ps(1.0001f), b = _mm512_set1_ps(0.9999f);
    return instructions_per_second([&](__m512 acc) { return _mm512_fmadd_ps(a, b, acc); });
}

double dot_rate() {
    const __m512i ones = _mm512_set1_epi32(0x3F803F80);  // bf16 pairs (1, 1)
    __m512bh a, b;
    static_assert(sizeof a == sizeof ones);
    __builtin_memcpy(&a, &ones, sizeof a);
    __builtin_memcpy(&b, &ones, sizeof b);
    return instructions_per_second([&](__m512 acc) { return _mm512_dpbf16_ps(acc, a, b); });
}

}  // namespace

int main() {
    using tf::cpu::kernels::Isa;
    const double fma = fma_rate();
    std::printf("VFMADD231PS zmm: %.2f G instructions/s = %.1f G multiply-adds/s\n", fma / 1e9, fma * 16 / 1e9);
    if (!tf::cpu::kernels::isa_supported(Isa::avx512_bf16)) {
        std::printf("VDPBF16PS: does not run on this CPU\n");
        return 0;
    }
    const double dot = dot_rate();
    std::printf("VDPBF16PS zmm:   %.2f G instructions/s = %.1f G multiply-adds/s (%.2fx the FMA's)\n", dot / 1e9,
                dot * 32 / 1e9, dot * 32 / (fma * 16));
    return 0;
}
