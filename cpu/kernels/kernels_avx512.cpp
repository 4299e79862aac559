// The avx512 path of the kernels: kernels_impl.inc over vec16_avx512.h.
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
#include "cpu/kernels/vec16_avx512.h"

namespace tf::cpu::kernels::avx512 {

constexpr Isa kIsa = Isa::avx512;
// VDPBF16PS emulated: this path runs on CPUs without it.
inline V16 dot_pairs(const V16& acc, const P32& x, const P32& w) { return dot_pairs_emulated(acc, x, w); }
#include "cpu/kernels/kernels_impl.inc"

}  // namespace tf::cpu::kernels::avx512
