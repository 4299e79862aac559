// The conversation a chat template renders, as plain C++ values (the HTTP
// layer fills these from its JSON; nothing here needs nlohmann).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tf::tokenizer {

struct ToolCall {
    std::string id;              // optional; exposed as tool_call.id when not empty
    std::string name;            // function name
    std::string arguments_json;  // a JSON value: an object (shown to the template as a mapping) or a
                                 // JSON string (shown as a string, as OpenAI clients send it); empty: {}
};

struct ChatMessage {
    std::string role;
    std::optional<std::string> content;  // absent: the template sees none
    std::vector<ToolCall> tool_calls;    // exposed as message.tool_calls when not empty
    std::optional<std::string> reasoning_content;
    std::optional<std::string> name;
    std::optional<std::string> tool_call_id;
};

struct ChatRequest {
    std::vector<ChatMessage> messages;
    bool add_generation_prompt = true;
    std::vector<std::string> tools_json;  // each one JSON object (an OpenAI "tools" entry)
    // Further template variables as JSON values, e.g. {"enable_thinking", "false"}.
    std::vector<std::pair<std::string, std::string>> variables_json;
};

}  // namespace tf::tokenizer
