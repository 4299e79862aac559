// A GGUF file as a model: the ModelConfig its `{arch}.*` keys describe, and
// its tensors under the Hugging Face names the weight loader asks for, so
// Weights::load reads a GGUF exactly as it reads a checkpoint directory.
//
// Architectures: `llama` (Llama, Mistral), `qwen2`, `qwen3`, `qwen3moe`
// (its experts: gguf_experts.h), `nemotron_h` and `nemotron_h_moe`
// (gguf_nemotron.h); any other is refused by name before a tensor is read. llama.cpp's converter reorders the rows of each `llama`
// head of Q and K (its RoPE rotates adjacent pairs, transformers' rotates
// halves); gguf_checkpoint puts them back, so a GGUF and the directory it
// came from give the same logits.
//
// Thread-safety: pure functions; the Checkpoint is immutable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "model/gguf.h"
#include "model/model_config.h"
#include "model/safetensors.h"

namespace tf::model {

// Throws LoadError naming the file and the key.
ModelConfig gguf_model_config(const GgufFile& file);

// The tensors the loader reads, renamed ("blk.3.attn_q.weight" ->
// "model.layers.3.self_attn.q_proj.weight") with shapes in the Hugging Face
// order ([rows, cols]); a layer's stacked experts as one matrix per expert
// ("blk.3.ffn_up_exps.weight" -> "model.layers.3.mlp.experts.E.up_proj.weight").
// Unpermuted llama Q/K rows, Q5_0 blocks held as Q8_0 and routers not stored
// in F32 are copies; every other tensor points into the mapping, which the
// checkpoint keeps alive.
Checkpoint gguf_checkpoint(std::shared_ptr<const GgufFile> file, const ModelConfig& config);

// What MODEL names when it is a GGUF model: the file itself, the first file
// of its split set, or the one GGUF (or split set) in a directory without a
// config.json. nullopt for anything else (a Hugging Face directory). Throws
// LoadError for a directory holding several GGUF models.
std::optional<std::string> find_gguf_model(const std::string& model);

}  // namespace tf::model
