#include "http/anthropic_request.h"

#include <cctype>
#include <map>

#include "http/json_fields.h"

namespace tf::http {

namespace {

using namespace json_fields;

// The same bounds the OpenAI routes keep (openai_request.cpp).
constexpr int64_t kMaxTokensLimit = 1 << 24;
constexpr size_t kMaxStopSequences = 16;

// Anthropic's rule for tool names: 1 to 128 letters, digits, '_' or '-'.
bool valid_tool_name(const std::string& name) {
    if (name.empty() || name.size() > 128) return false;
    for (char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
    }
    return true;
}

std::string block_type(const Json& block, const std::string& where) {
    if (!block.is_object()) wrong_type(where, "a content block (an object)", block);
    return required_string(block, "type", where);
}

[[noreturn]] void unsupported_block(const std::string& where, const std::string& type, const char* role) {
    fail(where + ".type", "'" + type + "' blocks are not supported in " + role +
                              " messages here (this server reads text, tool_use, tool_result and thinking blocks)");
}

// "system": a string, or text blocks joined by a blank line. A leading
// per-request line such as Claude Code's billing line stays in here; the
// chat prompt sets it aside on every route alike (per_request_lines.h).
std::string system_text(const Json& system) {
    if (system.is_string()) return system.get<std::string>();
    if (!system.is_array()) wrong_type("system", "a string or an array of text blocks", system);
    std::string text;
    for (size_t i = 0; i < system.size(); ++i) {
        const std::string where = at("system", i);
        if (block_type(system[i], where) != "text") fail(where + ".type", "system blocks must be \"text\"");
        if (i > 0) text += "\n\n";
        text += required_string(system[i], "text", where);
    }
    return text;
}

// A tool_result's "content": a string, or text blocks joined as they come.
std::string tool_result_text(const Json& block, const std::string& where) {
    const Json* content = field(block, "content");
    if (!content) return {};
    if (content->is_string()) return content->get<std::string>();
    if (!content->is_array()) wrong_type(at(where, "content"), "a string or an array of text blocks", *content);
    std::string text;
    for (size_t i = 0; i < content->size(); ++i) {
        const std::string part = at(at(where, "content"), i);
        const std::string type = block_type((*content)[i], part);
        if (type != "text") unsupported_block(part, type, "tool_result");
        text += required_string((*content)[i], "text", part);
    }
    return text;
}

// One user message: its text blocks become user messages and each
// tool_result a tool message, in the order they come, so a result stays
// beside the text the user wrote around it.
void add_user_message(const Json& content, const std::string& where, const std::map<std::string, std::string>& tool_names,
                      std::vector<ChatMessage>& out) {
    if (content.is_string()) {
        out.push_back({"user", content.get<std::string>()});
        return;
    }
    std::optional<std::string> text;
    auto flush_text = [&] {
        if (text) out.push_back({"user", std::move(*text)});
        text.reset();
    };
    for (size_t i = 0; i < content.size(); ++i) {
        const Json& block = content[i];
        const std::string block_where = at(where, i);
        const std::string type = block_type(block, block_where);
        if (type == "text") {
            text = text.value_or("") + required_string(block, "text", block_where);
        } else if (type == "tool_result") {
            flush_text();
            ChatMessage result{"tool", tool_result_text(block, block_where)};
            result.tool_call_id = required_string(block, "tool_use_id", block_where);
            if (auto it = tool_names.find(*result.tool_call_id); it != tool_names.end()) result.name = it->second;
            // Templates have no place for a failed call: the text says it,
            // so the model reads the result as an error.
            if (boolean(block, "is_error", block_where).value_or(false)) result.content = "Error: " + result.content;
            out.push_back(std::move(result));
        } else {
            unsupported_block(block_where, type, "user");
        }
    }
    flush_text();
}

// One assistant message: text blocks joined, tool_use blocks as its calls,
// thinking blocks as its reasoning. `tool_names` learns each call's id.
void add_assistant_message(const Json& content, const std::string& where, std::map<std::string, std::string>& tool_names,
                           std::vector<ChatMessage>& out) {
    ChatMessage message{"assistant", ""};
    if (content.is_string()) {
        message.content = content.get<std::string>();
        out.push_back(std::move(message));
        return;
    }
    for (size_t i = 0; i < content.size(); ++i) {
        const Json& block = content[i];
        const std::string block_where = at(where, i);
        const std::string type = block_type(block, block_where);
        if (type == "text") {
            message.content += required_string(block, "text", block_where);
        } else if (type == "tool_use") {
            tokenizer::ToolCall call;
            call.id = required_string(block, "id", block_where);
            call.name = required_string(block, "name", block_where);
            const Json* input = field(block, "input");
            if (input && !input->is_object()) wrong_type(at(block_where, "input"), "an object", *input);
            call.arguments_json = input ? input->dump() : "{}";
            tool_names[call.id] = call.name;
            message.tool_calls.push_back(std::move(call));
        } else if (type == "thinking") {
            message.reasoning_content = message.reasoning_content.value_or("") + required_string(block, "thinking", block_where);
        } else if (type == "redacted_thinking") {
            // Encrypted by Anthropic's servers: nothing here can read it.
        } else {
            unsupported_block(block_where, type, "assistant");
        }
    }
    out.push_back(std::move(message));
}

std::vector<ChatMessage> parse_messages(const Json& root) {
    std::vector<ChatMessage> out;
    if (const Json* system = field(root, "system")) {
        std::string text = system_text(*system);
        if (!text.empty()) out.push_back({"system", std::move(text)});
    }
    const Json* messages = field(root, "messages");
    if (!messages) fail("messages", "required");
    if (!messages->is_array()) wrong_type("messages", "an array", *messages);
    if (messages->empty()) fail("messages", "must hold at least one message");
    std::map<std::string, std::string> tool_names;  // tool_use id -> the tool it called
    for (size_t i = 0; i < messages->size(); ++i) {
        const Json& m = (*messages)[i];
        const std::string where = at("messages", i);
        if (!m.is_object()) wrong_type(where, "an object", m);
        const std::string role = required_string(m, "role", where);
        const Json* content = field(m, "content");
        if (!content) fail(where + ".content", "required");
        if (!content->is_string() && !content->is_array()) {
            wrong_type(where + ".content", "a string or an array of content blocks", *content);
        }
        if (role == "user") {
            add_user_message(*content, where + ".content", tool_names, out);
        } else if (role == "assistant") {
            add_assistant_message(*content, where + ".content", tool_names, out);
        } else {
            fail(where + ".role", "'" + role + "' is not one of user, assistant (the system prompt goes in \"system\")");
        }
    }
    // Continuing a reply the client began needs the template to leave the
    // assistant's turn open, which chat templates cannot be told to do.
    if (messages->back().is_object() && messages->back().value("role", "") == "assistant") {
        fail(at("messages", messages->size() - 1) + ".role",
             "a final assistant message (a prefill to continue) is not supported; end with a user message");
    }
    return out;
}

// A tool in OpenAI's "tools" shape, which chat templates are written for.
std::vector<ToolDefinition> parse_tools(const Json& root) {
    std::vector<ToolDefinition> tools;
    const Json* list = field(root, "tools");
    if (!list) return tools;
    if (!list->is_array()) wrong_type("tools", "an array", *list);
    for (size_t i = 0; i < list->size(); ++i) {
        const Json& entry = (*list)[i];
        const std::string where = at("tools", i);
        if (!entry.is_object()) wrong_type(where, "an object", entry);
        // Anthropic-defined tools (bash_20250124, web_search_..., ...) come
        // with a type and no schema: their behaviour lives on Anthropic's
        // side, so this server cannot offer them and leaves them out.
        if (const std::optional<std::string> type = string(entry, "type", where); type && *type != "custom") continue;
        ToolDefinition tool;
        tool.name = required_string(entry, "name", where);
        if (!valid_tool_name(tool.name)) {
            fail(where + ".name", "'" + tool.name + "' must be 1 to 128 letters, digits, underscores or dashes");
        }
        for (const ToolDefinition& earlier : tools) {
            if (earlier.name == tool.name) fail(where + ".name", "'" + tool.name + "' is defined twice");
        }
        tool.description = string(entry, "description", where).value_or("");
        const Json* schema = field(entry, "input_schema");
        if (!schema) fail(where + ".input_schema", "required (a JSON Schema object)");
        if (!schema->is_object()) wrong_type(where + ".input_schema", "an object (a JSON Schema)", *schema);
        tool.parameters_json = schema->dump();
        Json function = {{"name", tool.name}};
        if (!tool.description.empty()) function["description"] = tool.description;
        function["parameters"] = *schema;
        tool.entry_json = Json{{"type", "function"}, {"function", std::move(function)}}.dump();
        tools.push_back(std::move(tool));
    }
    return tools;
}

ToolChoice parse_tool_choice(const Json& root, const std::vector<ToolDefinition>& tools, bool& parallel) {
    ToolChoice choice;
    choice.mode = tools.empty() ? ToolChoice::Mode::none : ToolChoice::Mode::automatic;
    const Json* v = field(root, "tool_choice");
    if (!v) return choice;
    if (!v->is_object()) wrong_type("tool_choice", "an object such as {\"type\": \"auto\"}", *v);
    const std::string type = required_string(*v, "type", "tool_choice");
    parallel = !boolean(*v, "disable_parallel_tool_use", "tool_choice").value_or(false);
    if (type == "none") {
        choice.mode = ToolChoice::Mode::none;
    } else if (type == "auto") {
        // Without tools there is nothing to call: the same as none.
    } else if (type == "any") {
        if (tools.empty()) fail("tool_choice.type", "\"any\" needs tools to call");
        choice.mode = ToolChoice::Mode::required;
    } else if (type == "tool") {
        choice.mode = ToolChoice::Mode::function;
        choice.function = required_string(*v, "name", "tool_choice");
        bool offered = false;
        for (const ToolDefinition& tool : tools) offered = offered || tool.name == choice.function;
        if (!offered) fail("tool_choice.name", "'" + choice.function + "' is not among tools");
    } else {
        fail("tool_choice.type", "'" + type + "' is not one of auto, any, tool, none");
    }
    return choice;
}

SamplingFields parse_sampling(const Json& root, bool count_only) {
    SamplingFields s;
    if (!count_only) {
        const std::optional<int64_t> max_tokens = integer(root, "max_tokens");
        if (!max_tokens) fail("max_tokens", "required (the most tokens the reply may have)");
        if (*max_tokens < 1 || *max_tokens > kMaxTokensLimit) {
            fail("max_tokens", std::to_string(*max_tokens) + " must be between 1 and " + std::to_string(kMaxTokensLimit));
        }
        s.max_tokens = static_cast<int32_t>(*max_tokens);
    }
    if (auto v = number(root, "temperature")) {
        if (!(*v >= 0 && *v <= 1)) fail("temperature", std::to_string(*v) + " is outside [0, 1]");
        s.temperature = static_cast<float>(*v);
    }
    if (auto v = number(root, "top_p")) {
        if (!(*v > 0 && *v <= 1)) fail("top_p", std::to_string(*v) + " is outside (0, 1]");
        s.top_p = static_cast<float>(*v);
    }
    if (auto v = integer(root, "top_k")) {
        if (*v < 0 || *v > (int64_t{1} << 30)) fail("top_k", std::to_string(*v) + " must be 0 (no limit) or positive");
        s.top_k = static_cast<int32_t>(*v);
    }
    // Not in Anthropic's API: the seed of chat completions, so that a sampled
    // request can be repeated (and a repeat drafted whole by Recall).
    if (const Json* v = field(root, "seed"); v && !v->is_null()) {
        if (!v->is_number_integer() && !v->is_number_unsigned()) wrong_type("seed", "an integer", *v);
        s.seed = v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
    }
    // Also this server's: the reply's token ids beside its content.
    s.return_token_ids = boolean(root, "return_token_ids").value_or(false);
    if (const Json* v = field(root, "stop_sequences")) {
        if (!v->is_array()) wrong_type("stop_sequences", "an array of strings", *v);
        if (v->size() > kMaxStopSequences) fail("stop_sequences", "at most " + std::to_string(kMaxStopSequences));
        for (size_t i = 0; i < v->size(); ++i) {
            const Json& item = (*v)[i];
            if (!item.is_string()) wrong_type(at("stop_sequences", i), "a string", item);
            if (item.get<std::string>().empty()) fail(at("stop_sequences", i), "must not be empty");
            s.stop.push_back(item.get<std::string>());
        }
    }
    if (!count_only) s.stream = boolean(root, "stream").value_or(false);
    return s;
}

void parse_thinking(const Json& root, MessagesRequest& request) {
    const Json* v = field(root, "thinking");
    if (!v) return;
    if (!v->is_object()) wrong_type("thinking", "an object such as {\"type\": \"enabled\", \"budget_tokens\": 1024}", *v);
    const std::string type = required_string(*v, "type", "thinking");
    if (type == "disabled") {
        request.thinking = false;
        return;
    }
    if (type != "enabled" && type != "adaptive") fail("thinking.type", "'" + type + "' is not one of enabled, disabled, adaptive");
    request.thinking = true;
    if (auto budget = integer(*v, "budget_tokens", "thinking")) {
        if (*budget < 1 || *budget > kMaxTokensLimit) {
            fail("thinking.budget_tokens", std::to_string(*budget) + " must be between 1 and " + std::to_string(kMaxTokensLimit));
        }
        request.thinking_budget = static_cast<int32_t>(*budget);
    }
}

}  // namespace

MessagesRequest parse_messages_request(std::string_view body, bool count_only) {
    const Json root = parse_object(body);
    MessagesRequest request;
    ChatRequest& chat = request.chat;
    chat.model = string(root, "model").value_or("");
    chat.messages = parse_messages(root);
    chat.tools = parse_tools(root);
    chat.tool_choice = parse_tool_choice(root, chat.tools, chat.parallel_tool_calls);
    chat.sampling = parse_sampling(root, count_only);
    if (const Json* metadata = field(root, "metadata"); metadata && !metadata->is_object()) {
        wrong_type("metadata", "an object", *metadata);
    }
    parse_thinking(root, request);
    // Qwen3-style templates read enable_thinking; others ignore the variable.
    if (request.thinking) chat.template_variables.emplace_back("enable_thinking", *request.thinking ? "true" : "false");
    return request;
}

}  // namespace tf::http
