// Lines that a client writes at the very start of its system prompt and
// changes on every request, set aside before the chat template renders, so
// that two turns of one conversation still share their leading tokens.
//
// Why only known lines: the prompt cache holds the KV of earlier prompts,
// and in a causal model every position's keys and values depend on every
// token before it. A prompt can resume from a cached one only up to the
// first token where the two differ; past it nothing cached is valid, however
// much of the rest matches. A line that changes per request at the top of
// the system prompt would therefore make every turn read the whole
// conversation again. The server cannot tell such a line from a system
// prompt the user really changed, so it recognises the ones it knows by
// their opening words and leaves them out; any other change costs the
// tokens from it to the end (docs/api-anthropic.md, "Text that changes per
// request").
//
// Applied to the first message when it is a system or developer message,
// on every chat-like route (chat completions, Messages, Responses,
// count_tokens, /apply-template), so a conversation is the same ids
// however it came. Pure; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/chat.h"

namespace tf::http {

// The openings of the lines set aside: Claude Code's billing line
// ("x-anthropic-billing-header: cc_version=...; cch=...;"), whose values
// change from one request to the next.
std::span<const std::string_view> per_request_line_openings();

// `system_text` less its leading lines that open with one of the known
// openings, and the newlines (blank lines included) after them. Text that
// does not start with one is returned unchanged, as is such a line further
// down (that is the user's text).
std::string without_per_request_lines(std::string_view system_text);

// The same on a conversation's first message when it is a system or
// developer message; a message left empty is removed, so the rest renders
// as if it had never been sent.
void set_aside_per_request_lines(std::vector<tokenizer::ChatMessage>& messages);

}  // namespace tf::http
