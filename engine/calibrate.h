// Measuring the backend's cost curve cost(M) at start-up, so the copy window
// knows what verifying M rows costs on this machine (DESIGN.md 6).
// Runs forwards on a scratch stream; call before serving, on the thread that
// owns the backend.
#pragma once

#include "engine/draft_window.h"
#include "model/backend.h"

namespace tf::engine {

// Times forwards of M = 1..max_rows rows (each the best of `repeats`) after
// a `context`-token prefix, on stream id `scratch` (must not be open).
CostCurve measure_cost_curve(model::Backend& backend, int32_t max_rows, int32_t context = 64, int32_t repeats = 3,
                             model::StreamId scratch = -1);

}  // namespace tf::engine
