// RoPE's inverse frequencies as transformers computes them (fp32, with
// rope_scaling type llama3): one table per model that every backend's
// rotation kernel reads (cpu/kernels/rope.h, the CUDA qk_rope_kv) and that
// the GGUF reader checks a stored rope_freqs tensor against.
#pragma once

#include <vector>

#include "model/model_config.h"

namespace tf::model {

// head_dim / 2 inverse frequencies (rope_dim / 2 for partial rotation).
std::vector<float> rope_inv_freq(const ModelConfig& config);

}  // namespace tf::model
