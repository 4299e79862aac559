// The body of OpenAI's POST /v1/responses, translated at the edge into the
// native ChatRequest that /v1/chat/completions builds, as the Messages
// route does (anthropic_request.h): one path through the chat template,
// the tool-call machinery, the prompt cache and the engine for every route.
//
// The translation (docs/api-responses.md):
//   instructions                           -> a system message first
//   input: a string                        -> one user message
//   input: message items (user, assistant, system, developer;
//          a string or input_text/output_text parts) -> messages; developer is read as system
//   function_call items (call_id, name, arguments)   -> the calls of an assistant message
//   function_call_output items (call_id, output)     -> tool messages
//   reasoning items                        -> the next assistant message's reasoning_content
//   tools of type "function"               -> function tools; other types are left out
//   tool_choice auto / none / required / {type: function, name} -> the same modes
//   max_output_tokens, temperature, top_p, stream -> sampling
//   text.format text / json_object / json_schema  -> response_format (constrained decoding)
//   reasoning {effort}                     -> the template variable enable_thinking
//
// The API is stateless here: nothing is kept between requests, so
// previous_response_id (and conversation, background) are refused with a 400
// naming them; store, include, prompt_cache_key, metadata, user, truncation
// and service_tier are accepted and have no effect. Every rejection is an
// ApiError(400) naming the field. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "http/openai_request.h"

namespace tf::http {

struct ResponsesRequest {
    ChatRequest chat;  // model, messages, tools, tool_choice, sampling (n = 1, no logprobs)
    // reasoning.effort given: true, unless it is "none"; absent: the chat
    // template's default.
    std::optional<bool> thinking;
    // The request's settings that the response object repeats (instructions,
    // tools, tool_choice, text, reasoning, ...), as a JSON object's text.
    std::string echoed_json;
};

ResponsesRequest parse_responses_request(std::string_view body);

}  // namespace tf::http
