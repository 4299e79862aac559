// The avx2 path of the kernels: kernels_impl.inc over vec16_avx2.h.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "model/kernels/isa.h"
#include "model/kernels/packing.h"
#include "model/kernels/vec16_avx2.h"

namespace tf::model::kernels::avx2 {

constexpr Isa kIsa = Isa::avx2;
#include "model/kernels/kernels_impl.inc"

}  // namespace tf::model::kernels::avx2
