// The build without the CUDA toolkit: the CUDA backend cannot be loaded.
#include <stdexcept>

#include "gpu/cuda_backend.h"

namespace tf::gpu {

std::unique_ptr<model::Backend> load_cuda_backend(const std::string&, const CudaOptions&, CudaLoadInfo*) {
    throw std::runtime_error("this binary was built without CUDA (nvcc was not found at configure time)");
}

}  // namespace tf::gpu
