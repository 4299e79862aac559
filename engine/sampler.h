// The engine samples with model/sampling.h: the backends sample each row
// where its logits are (model::Backend::forward), and the engine's tests and
// tools call the same functions on logits they hold.
#pragma once

#include "model/sampling.h"

namespace tf::engine {

using model::argmax;
using model::sample;
using model::SamplingParams;
using model::uniform_at;

}  // namespace tf::engine
