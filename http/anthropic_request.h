// The body of Anthropic's POST /v1/messages (and /v1/messages/count_tokens),
// translated at the edge into the native ChatRequest that
// /v1/chat/completions builds: both routes then share one path through the
// chat template, the tool-call machinery and the engine. Nothing below
// http/ learns that a request came in Anthropic's shape.
//
// The translation (docs/api-anthropic.md):
//   system (string or text blocks)      -> a system message, blocks joined by a blank line
//                                          (a leading billing line is set aside later, for
//                                          every route: per_request_lines.h)
//   user text blocks                    -> a user message
//   user tool_result blocks             -> tool messages (tool_call_id, the tool's name), in order
//   assistant text / tool_use blocks    -> an assistant message with content and tool_calls
//   assistant thinking blocks           -> that message's reasoning_content
//   tools (name, description, input_schema) -> function tools
//   tool_choice auto / any / tool / none -> automatic / required / function / none
//   max_tokens, temperature, top_p, top_k, stop_sequences, stream -> sampling
//   thinking enabled / disabled         -> the template variable enable_thinking
// Fields this server has no use for (metadata, cache_control, citations,
// service_tier, ...) are accepted and ignored, as the API's clients send
// them unasked. Content it cannot serve (images, documents) is refused.
//
// Every rejection is an ApiError(400) naming the field. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "http/openai_request.h"

namespace tf::http {

struct MessagesRequest {
    ChatRequest chat;  // model, messages, tools, tool_choice, sampling (n = 1, no logprobs)
    // thinking.type: enabled (or adaptive) asks for the model's reasoning,
    // disabled for none; absent leaves the chat template's default.
    std::optional<bool> thinking;
    // thinking.budget_tokens: the most tokens the reasoning may take when
    // the model marks its reasoning (tokens past it are not thought).
    std::optional<int32_t> thinking_budget;
};

// `count_only`: the body of /v1/messages/count_tokens, which has no
// max_tokens; /v1/messages requires it.
MessagesRequest parse_messages_request(std::string_view body, bool count_only = false);

}  // namespace tf::http
