// The scalar path of the kernels: kernels_impl.inc over vec16_scalar.h.
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
#include "cpu/kernels/vec16_scalar.h"

namespace tf::cpu::kernels::scalar {

constexpr Isa kIsa = Isa::scalar;
#include "cpu/kernels/kernels_impl.inc"

}  // namespace tf::cpu::kernels::scalar
