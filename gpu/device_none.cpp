// The build without the CUDA toolkit: there is never a device.
#include "gpu/device.h"

namespace tf::gpu {

bool built_with_cuda() { return false; }

std::vector<DeviceInfo> list_devices(std::string* why_none) {
    if (why_none) *why_none = "built without CUDA (nvcc was not found at configure time)";
    return {};
}

bool self_test(int, std::string* error) {
    if (error) *error = "built without CUDA";
    return false;
}

}  // namespace tf::gpu
