// The scalar path of the kernels: kernels_impl.inc over vec16_scalar.h.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "model/kernels/isa.h"
#include "model/kernels/packing.h"
#include "model/kernels/vec16_scalar.h"

namespace tf::model::kernels::scalar {

constexpr Isa kIsa = Isa::scalar;
#include "model/kernels/kernels_impl.inc"

}  // namespace tf::model::kernels::scalar
