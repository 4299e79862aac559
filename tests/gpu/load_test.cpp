// load_cuda_backend says clearly why it cannot load: a build without CUDA,
// or no device. Runs in every build; skipped where a device is present.
#include <gtest/gtest.h>

#include <string>

#include "gpu/cuda_backend.h"
#include "gpu/device.h"
#include "tests/model/test_support.h"

namespace tf::gpu {
namespace {

TEST(GpuBackendLoad, WithoutADeviceTheErrorSaysWhy) {
    std::string why;
    if (!list_devices(&why).empty()) GTEST_SKIP() << "a CUDA device is present; tests/gpu/cuda_backend_test.cpp loads it";
    try {
        load_cuda_backend(model::testing::tinycode_dir(), CudaOptions{});
        FAIL() << "load_cuda_backend succeeded without a device";
    } catch (const std::runtime_error& e) {
        const std::string message = e.what();
        if (built_with_cuda()) {
            EXPECT_EQ(message, "no CUDA device: " + why);
        } else {
            EXPECT_EQ(message, "this binary was built without CUDA (nvcc was not found at configure time)");
        }
    }
}

}  // namespace
}  // namespace tf::gpu
