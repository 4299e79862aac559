// The OpenAI request bodies of /v1/completions and /v1/chat/completions,
// parsed and validated into native structs. JSON stops here: nothing below
// http/ sees it. Every rejection is an ApiError(400) naming the field.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/api_error.h"
#include "tokenizer/chat.h"

namespace tf::http {

// One prompt of /v1/completions: text, or token ids.
struct PromptInput {
    std::optional<std::string> text;
    std::vector<int32_t> ids;
};

struct ChatMessage {
    std::string role;     // system, user, assistant, tool, developer
    std::string content;  // text parts joined; null or absent (an assistant's tool calls alone): empty
    // assistant: the calls it made. arguments_json is the object when the
    // request's "arguments" string holds one (so templates that write
    // `arguments | tojson` do not quote it twice), else that string quoted.
    std::vector<tokenizer::ToolCall> tool_calls;
    std::optional<std::string> tool_call_id;  // tool: the call it answers
    std::optional<std::string> name;
    // assistant: the thoughts it wrote before its answer, given back so a
    // template that shows them (Qwen3's reasoning_content) renders the
    // turn as it was generated.
    std::optional<std::string> reasoning_content;
};

// One entry of "tools": a function the model may call.
struct ToolDefinition {
    std::string name;
    std::string description;
    std::string parameters_json;  // its JSON Schema; empty when not given
    std::string entry_json;       // the whole entry as sent, for the chat template
};

// "tool_choice". Absent: auto with tools, none without.
struct ToolChoice {
    enum class Mode { none, automatic, required, function };
    Mode mode = Mode::automatic;
    std::string function;  // Mode::function: the one to call
};

// response_format: free text, any JSON object, or JSON that a schema
// allows (enforced by constrained decoding, docs/structured-output.md).
struct ResponseFormat {
    enum class Type { text, json_object, json_schema };
    Type type = Type::text;
    std::string schema_json;  // json_schema: the schema, serialized
    std::string name;         // json_schema.name
    bool strict = false;      // json_schema.strict (the schema is enforced either way)
};

struct SamplingFields {
    std::optional<int32_t> max_tokens;  // absent: up to the context's end
    float temperature = 1.0f;
    float top_p = 1.0f;
    int32_t top_k = 0;    // 0 (or -1 in the request): no limit
    float min_p = 0.0f;
    std::optional<uint64_t> seed;
    std::vector<std::string> stop;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    // vLLM's extension: each choice (and each streamed chunk's choice) also
    // carries the token ids it adds as "token_ids". Off unless asked for.
    bool return_token_ids = false;
    // Choices per prompt, each its own stream. Choice j samples with seed
    // `seed + j`, so a request with n = 1 and that seed repeats it alone.
    int32_t n = 1;
    // -1: no logprobs. Otherwise each reply token's logprob with this many
    // alternatives: completions' "logprobs": N, chat's "top_logprobs" once
    // "logprobs" is true.
    int32_t logprobs = -1;
    ResponseFormat response_format;
};

struct CompletionRequest {
    std::string model;  // empty when the request names none: the served model
    std::vector<PromptInput> prompts;  // a list of prompts gets one choice each
    bool echo = false;
    // Fill-in-the-middle: the text after the gap the prompt's text comes
    // before (OpenAI's "suffix"); absent or null: a plain completion.
    std::optional<std::string> suffix;
    SamplingFields sampling;
};

struct ChatRequest {
    std::string model;  // empty when the request names none: the served model
    std::vector<ChatMessage> messages;
    bool add_generation_prompt = true;  // the template opens the assistant's turn
    std::vector<ToolDefinition> tools;  // empty: none offered
    ToolChoice tool_choice;             // Mode::none when no tools are offered
    // Accepted as OpenAI clients send it; not enforced: a model that writes
    // several calls has each of them reported.
    bool parallel_tool_calls = true;
    SamplingFields sampling;
    // Further chat-template variables as JSON values, such as
    // {"enable_thinking", "false"} (tokenizer::ChatRequest::variables_json).
    std::vector<std::pair<std::string, std::string>> template_variables;
};

CompletionRequest parse_completion_request(std::string_view body);
ChatRequest parse_chat_request(std::string_view body);

}  // namespace tf::http
