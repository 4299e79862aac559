// The checkpoint writer's config.json, and the facts about a spec its
// tensor list and values share with it (model/checkpoint_writer.cpp). Not
// part of the model/ interface: checkpoint_writer.h is.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "model/checkpoint_writer.h"

namespace tf::model {

bool is_nemotron_h(const CheckpointSpec& s);
bool is_nemotron(const CheckpointSpec& s);
bool is_qwen3_moe(const CheckpointSpec& s);

// Mamba2 widths: in_proj's rows are z (inner), then xBC (conv), then dt (heads).
struct MambaDims {
    int64_t inner, groups_state, conv, proj;
};
MambaDims mamba_dims(const CheckpointSpec& s);

// config.json for `s`, as transformers writes it for that family (two-space
// indent, a final newline).
std::string config_json_text(const CheckpointSpec& s);

}  // namespace tf::model
