#include "gpu/device.h"

#include <cuda_runtime.h>

namespace tf::gpu {

// kernels

// out[i] = 2 * i + 1, so a wrong launch, a stale buffer or a failed copy
// all show up as a wrong value.
__global__ void odd_numbers_kernel(int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2 * i + 1;
}

// launchers

bool built_with_cuda() { return true; }

std::vector<DeviceInfo> list_devices(std::string* why_none) {
    std::vector<DeviceInfo> devices;
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        if (why_none) *why_none = cudaGetErrorString(status);
        cudaGetLastError();  // clear the sticky error so later calls start clean
        return devices;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
        devices.push_back({i, prop.name, prop.totalGlobalMem, prop.major, prop.minor});
    }
    if (devices.empty() && why_none) *why_none = "no CUDA device found";
    return devices;
}

bool self_test(int device, std::string* error) {
    constexpr int n = 1000;
    auto fail = [&](cudaError_t status) {
        if (error) *error = cudaGetErrorString(status);
        return false;
    };
    if (cudaError_t s = cudaSetDevice(device); s != cudaSuccess) return fail(s);
    int* buffer = nullptr;
    if (cudaError_t s = cudaMalloc(&buffer, n * sizeof(int)); s != cudaSuccess) return fail(s);
    odd_numbers_kernel<<<(n + 255) / 256, 256>>>(buffer, n);
    std::vector<int> host(n);
    cudaError_t s = cudaGetLastError();
    if (s == cudaSuccess) s = cudaMemcpy(host.data(), buffer, n * sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(buffer);
    if (s != cudaSuccess) return fail(s);
    for (int i = 0; i < n; ++i) {
        if (host[i] != 2 * i + 1) {
            if (error) *error = "kernel wrote " + std::to_string(host[i]) + " at " + std::to_string(i);
            return false;
        }
    }
    return true;
}

}  // namespace tf::gpu
