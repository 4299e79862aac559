// The CUDA backend: model::Backend on one NVIDIA device, bf16 weights,
// batch-invariant kernels (docs/design.md, section 4) and rows sampled on
// the device. Declared in every build; without nvcc the loader says the
// binary was built without CUDA.
//
// Thread-safety: as model::Backend (one caller at a time), from any thread:
// each call that launches work makes CudaOptions::device current on the
// calling thread first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "model/backend.h"

namespace tf::gpu {

struct CudaOptions {
    int device = 0;
    // Share of the device's total memory this process may take for weights,
    // KV cache and scratch together; the KV pool gets what is left.
    double memory_fraction = 0.90;
    // Rows one forward pass runs at once; a larger forward runs in chunks of
    // this many rows (the same logits: rows are batch-invariant).
    int32_t max_rows = 512;
    // Replay decode/verify forwards of up to 64 rows as captured CUDA graphs
    // (one per bucket of rows); off, every forward launches its kernels one
    // by one. The logits are the same bits either way.
    bool use_graphs = true;
    // > 0: the KV pool holds at most this many positions (tests, benchmarks);
    // 0: whatever memory_fraction leaves.
    int64_t max_kv_tokens = 0;
};

// What a load did, for the startup line.
struct CudaLoadInfo {
    std::string device_name;
    size_t weight_bytes = 0;   // on the device
    int64_t kv_tokens = 0;     // positions the KV pool holds, all streams together
    double load_ms = 0.0;
    size_t scratch_bytes = 0;  // activations and sampler scratch for max_rows rows
};

// Loads DIR (config.json, generation_config.json, safetensors, sharded or
// not) onto the device. Throws model::LoadError for a bad checkpoint and
// std::runtime_error naming the CUDA call for a device failure.
std::unique_ptr<model::Backend> load_cuda_backend(const std::string& dir, const CudaOptions& options,
                                                  CudaLoadInfo* info = nullptr);

}  // namespace tf::gpu
