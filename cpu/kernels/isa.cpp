#include "cpu/kernels/isa.h"

#include <cpuid.h>

#include <csetjmp>
#include <csignal>
#include <stdexcept>

namespace tf::cpu::kernels {

namespace scalar {
extern const KernelTable table, table_bf16;
}
namespace avx2 {
extern const KernelTable table, table_bf16;
}
namespace avx512 {
extern const KernelTable table, table_bf16;
}
namespace avx512_bf16 {
extern const KernelTable table_bf16;
// Runs VDPBF16PS once on known values; true when it gave the right sum.
bool probe();
}  // namespace avx512_bf16

namespace {

bool cpuid_avx512_bf16() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
    return (eax >> 5) & 1;
}

sigjmp_buf probe_jump;
void on_sigill(int) { siglongjmp(probe_jump, 1); }

// Executes the instruction with SIGILL caught: the answer for CPUs whose
// hypervisor hides the CPUID bit of an instruction the silicon has. Runs
// once, at start-up, before any worker thread exists.
bool instruction_runs() {
    struct sigaction guard = {}, previous = {};
    guard.sa_handler = on_sigill;
    sigemptyset(&guard.sa_mask);
    if (sigaction(SIGILL, &guard, &previous) != 0) return false;
    bool runs = false;
    if (sigsetjmp(probe_jump, 1) == 0) runs = avx512_bf16::probe();
    sigaction(SIGILL, &previous, nullptr);
    return runs;
}

constexpr const char* kBf16Only = "activations f32: the avx512-bf16 path computes with bf16 activations only";

bool avx512_base() {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

}  // namespace

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::scalar: return "scalar";
        case Isa::avx2: return "avx2";
        case Isa::avx512: return "avx512";
        case Isa::avx512_bf16: return "avx512-bf16";
    }
    return "?";
}

const char* activations_name(Activations activations) {
    return activations == Activations::f32 ? "f32" : "bf16";
}

bool isa_supported(Isa isa) {
    __builtin_cpu_init();
    switch (isa) {
        case Isa::scalar: return true;
        case Isa::avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case Isa::avx512: return avx512_base();
        case Isa::avx512_bf16: {
            static const bool runs = avx512_base() && (cpuid_avx512_bf16() || instruction_runs());
            return runs;
        }
    }
    return false;
}

Isa best_isa() {
    __builtin_cpu_init();
    if (avx512_base() && cpuid_avx512_bf16()) return Isa::avx512_bf16;
    if (isa_supported(Isa::avx512)) return Isa::avx512;
    if (isa_supported(Isa::avx2)) return Isa::avx2;
    return Isa::scalar;
}

Isa parse_isa(const std::string& text) {
    Isa isa;
    if (text.empty() || text == "auto") {
        return best_isa();
    } else if (text == "avx512-bf16") {
        isa = Isa::avx512_bf16;
    } else if (text == "avx512") {
        isa = Isa::avx512;
    } else if (text == "avx2") {
        isa = Isa::avx2;
    } else if (text == "scalar") {
        isa = Isa::scalar;
    } else {
        throw std::invalid_argument("SIMD path \"" + text + "\" is not one of auto, avx512-bf16, avx512, avx2, scalar");
    }
    if (!isa_supported(isa)) {
        throw std::invalid_argument(std::string("SIMD path ") + isa_name(isa) + " is not supported by this CPU");
    }
    return isa;
}

Activations default_activations(Isa isa) {
    return isa == Isa::avx512_bf16 ? Activations::bf16 : Activations::f32;
}

Activations parse_activations(const std::string& text, Isa isa) {
    if (text.empty() || text == "auto") return default_activations(isa);
    if (text == "bf16") return Activations::bf16;
    if (text == "f32") {
        if (isa == Isa::avx512_bf16) throw std::invalid_argument(kBf16Only);
        return Activations::f32;
    }
    throw std::invalid_argument("activations \"" + text + "\" are not one of auto, f32, bf16");
}

const KernelTable& kernel_table(Isa isa) { return kernel_table(isa, default_activations(isa)); }

const KernelTable& kernel_table(Isa isa, Activations activations) {
    const bool bf16 = activations == Activations::bf16;
    switch (isa) {
        case Isa::scalar: return bf16 ? scalar::table_bf16 : scalar::table;
        case Isa::avx2: return bf16 ? avx2::table_bf16 : avx2::table;
        case Isa::avx512: return bf16 ? avx512::table_bf16 : avx512::table;
        case Isa::avx512_bf16:
            if (!bf16) throw std::invalid_argument(kBf16Only);
            return avx512_bf16::table_bf16;
    }
    return scalar::table;
}

}  // namespace tf::cpu::kernels
