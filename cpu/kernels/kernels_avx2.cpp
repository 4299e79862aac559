// The avx2 path of the kernels: kernels_impl.inc over vec16_avx2.h.
#include <algorithm>
#include <cassert>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "cpu/kernels/isa.h"
#include "cpu/kernels/packing.h"
#include "cpu/kernels/vec16_avx2.h"

namespace tf::cpu::kernels::avx2 {

constexpr Isa kIsa = Isa::avx2;
#include "cpu/kernels/kernels_impl.inc"

}  // namespace tf::cpu::kernels::avx2
