// The bodies tensorfold answers on the OpenAI routes, and SSE framing.
// Pure functions from native structs to JSON text; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "http/tool_calls.h"

namespace tf::http {

struct Usage {
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    // Of prompt_tokens, those whose KV the prompt cache (or a running
    // request with the same prompt) already held: not read again.
    int64_t cached_tokens = 0;
};

// One reply token's log-probability and the most likely tokens at its
// place (engine::TokenLogprob with the tokens written out).
struct LogprobEntry {
    std::string token;  // the token's bytes; may be part of a character
    float logprob = 0;
    std::vector<std::pair<std::string, float>> top;  // best first
};

struct Choice {
    int32_t index = 0;
    std::string text;
    std::optional<std::string> finish_reason;  // "stop", "length" or "tool_calls"; absent while streaming
    // Chat bodies: the calls parsed out of the reply. With calls and no
    // other text the message's content is null, as OpenAI writes it.
    std::vector<ToolCall> tool_calls;
    // Chat: the thoughts the reply opened with (reasoning.h), written as
    // "reasoning_content" and "reasoning" beside the content; empty: none.
    std::string reasoning;
    // Set only when the request asked for "return_token_ids": the ids this
    // choice (or this chunk of it) adds, written as "token_ids"; and, on
    // whole bodies, the prompt's ids, written as "prompt_token_ids" (in the
    // choice for completions, at the top level for chat, as vLLM does).
    std::optional<std::vector<int32_t>> token_ids;
    std::optional<std::vector<int32_t>> prompt_token_ids;
    // Set only when the request asked for logprobs: the entries of this
    // choice (or chunk). Completions write each token's offset into the
    // choice's whole text, counting from `text_offset`.
    std::optional<std::vector<LogprobEntry>> logprobs;
    int64_t text_offset = 0;
};

// What every body of one request shares.
struct ResponseHeader {
    std::string id;       // "cmpl-..." or "chatcmpl-..."
    int64_t created = 0;  // Unix seconds
    std::string model;
};

std::string completion_body(const ResponseHeader& header, const std::vector<Choice>& choices, const Usage& usage);
std::string chat_body(const ResponseHeader& header, const std::vector<Choice>& choices, const Usage& usage);

// Streaming chunks. `usage_null` adds "usage": null, as OpenAI does on every
// chunk when stream_options.include_usage is set.
std::string completion_chunk(const ResponseHeader& header, const Choice& choice, bool usage_null);
// The first chat chunk carries the role; later ones content, or reasoning
// (as "reasoning_content" and "reasoning") when the choice has some.
std::string chat_chunk(const ResponseHeader& header, const Choice& choice, bool first, bool usage_null);
// A streamed piece of a tool call (delta.tool_calls): its opening piece
// carries index, id, type and name with empty arguments; later pieces
// index and arguments text.
std::string chat_tool_call_chunk(const ResponseHeader& header, int32_t choice_index, const ReplyDelta& delta,
                                 bool usage_null);
// The final usage chunk: "choices": [] and the usage.
std::string usage_chunk(const ResponseHeader& header, bool chat, const Usage& usage);

// "data: <payload>\n\n"
std::string sse_event(const std::string& payload);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

}  // namespace tf::http
