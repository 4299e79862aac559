// CUDA device discovery, the first piece of the gpu/ backend. Thread-safe.
#pragma once

#include <string>
#include <vector>

namespace tf::gpu {

struct DeviceInfo {
    int index = 0;
    std::string name;
    size_t memory_bytes = 0;
    int compute_major = 0;
    int compute_minor = 0;
};

// True when this binary was built with the CUDA backend.
bool built_with_cuda();

// The CUDA devices this process can use; empty without a driver or a GPU,
// or when built without CUDA. `why_none` (if given) says why it is empty.
std::vector<DeviceInfo> list_devices(std::string* why_none = nullptr);

// Runs a small kernel on `device` and checks its result on the host: proves
// that the toolkit, driver and device work together. False with `error` set
// otherwise.
bool self_test(int device, std::string* error);

}  // namespace tf::gpu
