// A mixture-of-experts router: one token's router logits in, the experts it
// reads and their weights out (model_config.h, RouterKind, says the math of
// each kind). Pure functions of one row, so a token routes the same way
// alone, in a verify round or in prefill, whatever its neighbours chose.
//
// Every step has one fixed order: softmax's sum runs over experts in index
// order, a tie in a score goes to the lower expert index, and the weights of
// the chosen are normalized by their sum taken in rank order (best first).
//
// Thread-safety: pure; call from any thread.
#pragma once

#include <cstdint>
#include <span>

#include "model/model_config.h"

namespace tf::cpu {

struct ExpertChoice {
    int32_t expert;
    float weight;
};

// chosen := the config's experts_per_token experts for `logits` (one per
// expert), sorted by expert index ascending, the order their outputs are
// summed in. `bias` (num_experts, or nullptr) is a sigmoid router's
// selection bias. `scratch` holds at least 2 * num_experts floats.
void route_token(const model::MoeConfig& moe, const float* logits, const float* bias, std::span<ExpertChoice> chosen,
                 float* scratch);

}  // namespace tf::cpu
