// Anthropic's thinking.budget_tokens as a cap: once a reply has thought for
// that many tokens, the only token it may write next is the one that closes
// the thought ("</think>"), after which it answers freely. Built on the
// engine's constraint interface (engine/constraint.h), so a capped reply is
// the same tokens whatever drafted them.
//
// It applies only where the open and close markers are single tokens of
// their own (Qwen3, DeepSeek R1): elsewhere nothing marks the thought in a
// way the engine can count, and the budget is not enforced (null). Note the
// cost: a constrained reply is sampled on the host at every position.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/constraint.h"
#include "http/reasoning.h"
#include "tokenizer/tokenizer.h"

namespace tf::http {

// Null when the markers are not single tokens of `tokenizer` (or absent).
// `starts_inside`: the prompt opened the thought. `vocab_size`: the ids
// the mask spans.
std::shared_ptr<const engine::Constraint> thinking_budget(const tokenizer::Tokenizer& tokenizer,
                                                          const ReasoningMarkers& markers, bool starts_inside,
                                                          int32_t budget_tokens, uint32_t vocab_size);

}  // namespace tf::http
