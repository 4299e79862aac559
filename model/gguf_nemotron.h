// GGUF files of llama.cpp's `nemotron_h` (NemotronH: Mamba2, attention and
// MLP layers) and `nemotron_h_moe` (Nemotron 3: Mamba2, attention and
// mixture-of-experts layers) as the NemotronHForCausalLM directories they
// were converted from.
//
// The file states no layer pattern. A layer's kind is what its tensors are:
// ssm_in (Mamba2), attn_q (attention), ffn_up (MLP) or ffn_gate_inp
// (experts); the per-layer head_count_kv and feed_forward_length arrays
// must agree. Tensors come back under the names cpu/weights.cpp reads
// ("backbone.layers.3.mixer.in_proj.weight"), in the directory's shapes:
//   - ssm_a holds A = -exp(A_log) in F32; the loader wants A_log, so each
//     value is handed on as log(-A) (a copy). The converter computes A from
//     the stored A_log in f32, so log(-A) lands within a few parts in 1e8 of
//     A_log; where a bf16 value lies that close it is taken, which gives a
//     bf16 checkpoint's A_log back exactly (an f32 rounding was an ulp off
//     for some heads, visible in the logits of the f32-activation paths).
//   - ssm_d ([H, 1]), ssm_norm ([G, inner / G]) and ssm_conv1d ([conv_dim,
//     K]) are the directory's values in the directory's order; only their
//     shapes are set back to [H], [inner] and [conv_dim, 1, K].
//   - attention Q and K rows are reordered per head as for `llama` (the
//     converter permutes them though NemotronH has no RoPE); gguf_checkpoint
//     puts them back.
// What the forward cannot run (a Mamba projection bias, a gated expert,
// another router, a tensor this mapping does not know) is refused by name
// before a tensor is read.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/model_config.h"
#include "model/safetensors.h"

namespace tf::model {

bool is_nemotron_h_arch(const std::string& arch);  // nemotron_h, nemotron_h_moe

// Fills everything but the end-of-generation ids from the `{arch}.*` keys
// and the tensors present. Throws LoadError naming the file and the key or
// tensor.
void read_gguf_nemotron_h(const GgufFile& f, const std::string& arch, ModelConfig& c);

// The Hugging Face name of a nemotron_h tensor ("blk.0.ssm_in.weight" ->
// "backbone.layers.0.mixer.in_proj.weight"); empty for a name outside the
// mapping. The stacked experts keep their GGUF names (gguf_experts.h splits
// them).
std::string nemotron_h_name(const std::string& gguf);

// Sets the view of one of the reshaped Mamba2 tensors (above) to the
// directory's shape, and A to A_log in a copy added to `copies`; other views
// pass unchanged.
void nemotron_h_view(TensorView& view, const ModelConfig& config, std::vector<std::vector<std::byte>>& copies);

}  // namespace tf::model
