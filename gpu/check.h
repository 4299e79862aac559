// Error checks for CUDA calls and kernel launches, shared by the device code
// (C++17, nvcc) and the host code of the CUDA backend (C++20). Every runtime
// call goes through TF_CUDA_CHECK, and every launch is followed by
// TF_CUDA_CHECK_LAUNCH: a failure throws std::runtime_error naming the call,
// the file and line, and the runtime's description of the error.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace tf::gpu {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
    throw std::runtime_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                             cudaGetErrorString(status) + " (" + cudaGetErrorName(status) + ")");
}

[[noreturn]] inline void throw_shape_error(const char* condition, const char* what, const char* file, int line) {
    throw std::logic_error(std::string(what) + " (" + condition + " does not hold at " + file + ":" +
                           std::to_string(line) + ")");
}

}  // namespace tf::gpu

#define TF_CUDA_CHECK(call)                                                                    \
    do {                                                                                       \
        const cudaError_t tf_cuda_status_ = (call);                                            \
        if (tf_cuda_status_ != cudaSuccess) {                                                  \
            ::tf::gpu::throw_cuda_error(tf_cuda_status_, #call, __FILE__, __LINE__);           \
        }                                                                                      \
    } while (0)

// After a <<<...>>> launch: a bad configuration or an earlier asynchronous
// fault shows up here, named after the kernel.
#define TF_CUDA_CHECK_LAUNCH(kernel_name)                                                      \
    do {                                                                                       \
        const cudaError_t tf_cuda_status_ = cudaGetLastError();                                \
        if (tf_cuda_status_ != cudaSuccess) {                                                  \
            ::tf::gpu::throw_cuda_error(tf_cuda_status_, "launch of " kernel_name, __FILE__, __LINE__); \
        }                                                                                      \
    } while (0)

// A launcher's assumption about its shapes; std::logic_error when broken
// (checked in every build type, unlike assert).
#define TF_GPU_REQUIRE(condition, what)                                                        \
    do {                                                                                       \
        if (!(condition)) ::tf::gpu::throw_shape_error(#condition, what, __FILE__, __LINE__);  \
    } while (0)
