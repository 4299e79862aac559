#include "model/kernels/isa.h"

#include <stdexcept>

namespace tf::model::kernels {

namespace scalar {
extern const KernelTable table;
}
namespace avx2 {
extern const KernelTable table;
}
namespace avx512 {
extern const KernelTable table;
}

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::scalar: return "scalar";
        case Isa::avx2: return "avx2";
        case Isa::avx512: return "avx512";
    }
    return "?";
}

bool isa_supported(Isa isa) {
    __builtin_cpu_init();
    switch (isa) {
        case Isa::scalar: return true;
        case Isa::avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case Isa::avx512:
            return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx2") &&
                   __builtin_cpu_supports("fma");
    }
    return false;
}

Isa best_isa() {
    if (isa_supported(Isa::avx512)) return Isa::avx512;
    if (isa_supported(Isa::avx2)) return Isa::avx2;
    return Isa::scalar;
}

Isa parse_isa(const std::string& text) {
    Isa isa;
    if (text.empty() || text == "auto") {
        return best_isa();
    } else if (text == "avx512") {
        isa = Isa::avx512;
    } else if (text == "avx2") {
        isa = Isa::avx2;
    } else if (text == "scalar") {
        isa = Isa::scalar;
    } else {
        throw std::invalid_argument("SIMD path \"" + text + "\" is not one of auto, avx512, avx2, scalar");
    }
    if (!isa_supported(isa)) {
        throw std::invalid_argument(std::string("SIMD path ") + isa_name(isa) + " is not supported by this CPU");
    }
    return isa;
}

const KernelTable& kernel_table(Isa isa) {
    switch (isa) {
        case Isa::scalar: return scalar::table;
        case Isa::avx2: return avx2::table;
        case Isa::avx512: return avx512::table;
    }
    return scalar::table;
}

}  // namespace tf::model::kernels
