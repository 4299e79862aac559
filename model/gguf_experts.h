// The mixture-of-experts part of a GGUF model (arch `qwen3moe`): its
// `{arch}.expert_*` keys as a MoeConfig, which layers carry experts, and the
// stacked expert tensors as one matrix per expert under the Hugging Face
// names the weight loader asks for.
//
// llama.cpp stacks a layer's experts into one 3-D tensor per projection,
// dims (innermost first) [cols, rows, experts]: expert e's rows are one
// contiguous run of the data for any block type, so its matrix is a view at
// an offset, not a copy. The router (`ffn_gate_inp`) is handed to the loader
// in F32 whatever the file stores, so routing always reads unquantized
// weights.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/model_config.h"
#include "model/safetensors.h"

namespace tf::model {

// Fills c.moe and c.sparse_layers from `{arch}.expert_*` and the layers'
// tensors (c.num_layers and c.intermediate_size already read). Refuses by
// name what the forward does not run: another gating function, expert
// groups, shared experts, a routing scale, router biases, or a layer that is
// neither dense nor sparse. Throws LoadError naming the file and the key or
// tensor.
void read_gguf_experts(const GgufFile& f, const std::string& arch, ModelConfig& c);

// Whether `gguf_name` is a layer's stacked experts ("blk.N.ffn_up_exps.weight",
// also the fused "ffn_gate_up_exps").
bool is_stacked_experts(const std::string& gguf_name);

// `stacked` (the tensor's view as gguf_checkpoint builds it, Hugging Face
// shape [experts, rows, cols]) as one view per expert, added to `out` as
// model.layers.N.mlp.experts.E.{gate,up,down}_proj.weight (NemotronH:
// backbone.layers.N.mixer.experts.E.{up,down}_proj.weight), each
// [rows, cols] and pointing into `stacked`'s bytes.
void add_expert_views(const TensorView& stacked, const ModelConfig& config, std::map<std::string, TensorView>& out);

// A router's view in F32: itself when it is F32, else a copy in `copies`
// (F16 and BF16 widened, quantized blocks dequantized: the same weights).
TensorView router_in_f32(TensorView router, std::vector<std::vector<std::byte>>& copies);

}  // namespace tf::model
