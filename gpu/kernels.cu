// The CUDA backend's kernels, one header per layer under gpu/kernels/, in
// one translation unit (one nvcc run per architecture keeps builds short).
// The launchers they define are declared in gpu/kernels/launch.h.
#include "gpu/kernels/attention.cuh"
#include "gpu/kernels/embedding.cuh"
#include "gpu/kernels/gemm.cuh"
#include "gpu/kernels/kv_copy.cuh"
#include "gpu/kernels/rmsnorm.cuh"
#include "gpu/kernels/rope_kv.cuh"
#include "gpu/kernels/sampler.cuh"
#include "gpu/kernels/swiglu.cuh"
