#include "http/responses_request.h"

#include <cctype>
#include <map>

#include "http/json_fields.h"

namespace tf::http {

namespace {

using namespace json_fields;

// The same bound the other routes keep (openai_request.cpp).
constexpr int64_t kMaxTokensLimit = 1 << 24;

// OpenAI's rule for function names: 1 to 64 letters, digits, '_' or '-'.
bool valid_function_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
    }
    return true;
}

// Fields a stateful server would need, with what to do instead.
void refuse_stateful(const Json& root) {
    if (field(root, "previous_response_id")) {
        fail("previous_response_id", "not supported: this server keeps no responses (store has no effect); send the "
                                     "whole conversation in \"input\", earlier output items included");
    }
    if (field(root, "conversation")) {
        fail("conversation", "not supported: this server keeps no conversations; send the whole conversation in \"input\"");
    }
    if (boolean(root, "background").value_or(false)) {
        fail("background", "not supported: a response is answered on the request that asks for it (use stream)");
    }
    if (field(root, "prompt")) fail("prompt", "stored prompt templates are not supported; send \"instructions\" and \"input\"");
}

// A message's "content": a string, or input_text / output_text parts
// joined as they come (refusals read as text, so the turn is kept whole).
std::string message_text(const Json& content, const std::string& where) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) wrong_type(where, "a string or an array of content parts", content);
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const Json& part = content[i];
        const std::string part_where = at(where, i);
        if (!part.is_object()) wrong_type(part_where, "a content part (an object)", part);
        const std::string type = required_string(part, "type", part_where);
        if (type == "input_text" || type == "output_text" || type == "text") {
            text += required_string(part, "text", part_where);
        } else if (type == "refusal") {
            text += required_string(part, "refusal", part_where);
        } else {
            fail(part_where + ".type", "'" + type + "' parts are not supported here (this server reads input_text and "
                                                    "output_text; images and files are not)");
        }
    }
    return text;
}

// A function_call_output's "output": a string, or input_text parts.
std::string call_output_text(const Json& item, const std::string& where) {
    const Json* output = field(item, "output");
    if (!output) fail(at(where, "output"), "required (the call's result)");
    return message_text(*output, at(where, "output"));
}

// An earlier reasoning item's text: its reasoning_text content, else its
// summary (encrypted_content is another server's and cannot be read).
std::string reasoning_text(const Json& item, const std::string& where) {
    std::string text;
    for (const char* key : {"content", "summary"}) {
        const Json* parts = field(item, key);
        if (!parts) continue;
        if (!parts->is_array()) wrong_type(at(where, key), "an array", *parts);
        for (size_t i = 0; i < parts->size(); ++i) {
            const Json& part = (*parts)[i];
            if (!part.is_object()) wrong_type(at(at(where, key), i), "an object", part);
            if (!text.empty()) text += "\n\n";
            text += required_string(part, "text", at(at(where, key), i));
        }
        if (!text.empty()) return text;
    }
    return text;
}

// Builds the conversation from instructions and input. Output items of an
// earlier turn come back as separate items (a message, then its calls), so
// consecutive assistant items join into one assistant message, as the
// template saw them when they were generated.
class Conversation {
public:
    std::vector<ChatMessage> messages;

    void add_input(const Json& input) {
        if (input.is_string()) {
            messages.push_back({"user", input.get<std::string>()});
            return;
        }
        if (!input.is_array()) wrong_type("input", "a string or an array of input items", input);
        if (input.empty()) fail("input", "must hold at least one item");
        for (size_t i = 0; i < input.size(); ++i) add_item(input[i], at("input", i));
    }

private:
    void add_item(const Json& item, const std::string& where) {
        if (!item.is_object()) wrong_type(where, "an input item (an object)", item);
        // A message may leave out its type (the "easy" input message).
        const std::string type = string(item, "type", where).value_or("message");
        if (type == "message") return add_message(item, where);
        if (type == "function_call") return add_call(item, where);
        if (type == "function_call_output") return add_call_output(item, where);
        if (type == "reasoning") {
            // An item with only encrypted_content (another server's) has no
            // text to give back: the turn renders as if it had none.
            const std::string text = reasoning_text(item, where);
            if (!text.empty()) pending_reasoning_ = pending_reasoning_ ? *pending_reasoning_ + "\n\n" + text : text;
            return;
        }
        fail(where + ".type", "'" + type + "' is not supported here (input items may be message, function_call, "
                                          "function_call_output or reasoning)");
    }

    void add_message(const Json& item, const std::string& where) {
        std::string role = required_string(item, "role", where);
        if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
            fail(where + ".role", "'" + role + "' is not one of user, assistant, system, developer");
        }
        const Json* content = field(item, "content");
        if (!content) fail(where + ".content", "required");
        // Developer messages are the system prompt by another name, and chat
        // templates know only "system".
        if (role == "developer") role = "system";
        ChatMessage message{role, message_text(*content, where + ".content")};
        if (role == "assistant") {
            message.reasoning_content = std::move(pending_reasoning_);
            pending_reasoning_.reset();
            messages.push_back(std::move(message));
            assistant_open_ = true;
            return;
        }
        drop_reasoning();
        messages.push_back(std::move(message));
        assistant_open_ = false;
    }

    void add_call(const Json& item, const std::string& where) {
        tokenizer::ToolCall call;
        call.id = required_string(item, "call_id", where);
        call.name = required_string(item, "name", where);
        // "arguments" is a string of JSON; templates want the object itself
        // (`arguments | tojson` would quote a string twice), as chat
        // completions passes it (openai_request.cpp).
        const std::string arguments = string(item, "arguments", where).value_or("{}");
        const Json object = Json::parse(arguments, nullptr, false);
        call.arguments_json = !object.is_discarded() && object.is_object() ? object.dump() : Json(arguments).dump();
        tool_names_[call.id] = call.name;
        if (!assistant_open_ || pending_reasoning_) {
            messages.push_back({"assistant", ""});
            messages.back().reasoning_content = std::move(pending_reasoning_);
            pending_reasoning_.reset();
            assistant_open_ = true;
        }
        messages.back().tool_calls.push_back(std::move(call));
    }

    void add_call_output(const Json& item, const std::string& where) {
        drop_reasoning();
        ChatMessage result{"tool", call_output_text(item, where)};
        result.tool_call_id = required_string(item, "call_id", where);
        if (auto it = tool_names_.find(*result.tool_call_id); it != tool_names_.end()) result.name = it->second;
        messages.push_back(std::move(result));
        assistant_open_ = false;
    }

    // Thoughts that led to no output (a turn cut short) have no assistant
    // message to be rendered in; templates show only the latest turn's
    // thoughts anyway, so they are left out.
    void drop_reasoning() { pending_reasoning_.reset(); }

    std::map<std::string, std::string> tool_names_;  // call_id -> the function it called
    std::optional<std::string> pending_reasoning_;   // a reasoning item's text, for the next assistant turn
    bool assistant_open_ = false;                    // the last message is the assistant's and calls may join it
};

// Function tools, in the "tools" shape chat templates are written for;
// `echoed` gets them in the Responses shape for the response object.
std::vector<ToolDefinition> parse_tools(const Json& root, Json& echoed) {
    std::vector<ToolDefinition> tools;
    echoed = Json::array();
    const Json* list = field(root, "tools");
    if (!list) return tools;
    if (!list->is_array()) wrong_type("tools", "an array", *list);
    for (size_t i = 0; i < list->size(); ++i) {
        const Json& entry = (*list)[i];
        const std::string where = at("tools", i);
        if (!entry.is_object()) wrong_type(where, "an object", entry);
        // Hosted tools (web_search, file_search, code_interpreter, ...) run on
        // OpenAI's side, and custom / local_shell tools need a grammar or a
        // call form of their own: none can be offered here, and clients such
        // as Codex send them unasked, so they are left out.
        if (required_string(entry, "type", where) != "function") continue;
        ToolDefinition tool;
        tool.name = required_string(entry, "name", where);
        if (!valid_function_name(tool.name)) {
            fail(where + ".name", "'" + tool.name + "' must be 1 to 64 letters, digits, underscores or dashes");
        }
        for (const ToolDefinition& earlier : tools) {
            if (earlier.name == tool.name) fail(where + ".name", "'" + tool.name + "' is defined twice");
        }
        tool.description = string(entry, "description", where).value_or("");
        const Json* parameters = field(entry, "parameters");
        if (parameters && !parameters->is_object()) wrong_type(where + ".parameters", "an object (a JSON Schema)", *parameters);
        Json function = {{"name", tool.name}};
        if (!tool.description.empty()) function["description"] = tool.description;
        if (parameters) {
            tool.parameters_json = parameters->dump();
            function["parameters"] = *parameters;
        }
        tool.entry_json = Json{{"type", "function"}, {"function", function}}.dump();
        echoed.push_back({{"type", "function"},
                          {"name", tool.name},
                          {"description", tool.description.empty() ? Json(nullptr) : Json(tool.description)},
                          {"parameters", parameters ? *parameters : Json(nullptr)},
                          {"strict", boolean(entry, "strict", where).value_or(true)}});
        tools.push_back(std::move(tool));
    }
    return tools;
}

ToolChoice parse_tool_choice(const Json& root, const std::vector<ToolDefinition>& tools, Json& echoed) {
    ToolChoice choice;
    choice.mode = tools.empty() ? ToolChoice::Mode::none : ToolChoice::Mode::automatic;
    const Json* v = field(root, "tool_choice");
    echoed = v ? *v : Json("auto");
    if (!v) return choice;
    if (v->is_string()) {
        const std::string mode = v->get<std::string>();
        if (mode == "none") {
            choice.mode = ToolChoice::Mode::none;
        } else if (mode == "required") {
            if (tools.empty()) fail("tool_choice", "\"required\" needs function tools to call");
            choice.mode = ToolChoice::Mode::required;
        } else if (mode != "auto") {
            fail("tool_choice", "'" + mode + "' is not one of auto, none, required");
        }
        return choice;
    }
    if (!v->is_object()) wrong_type("tool_choice", "a string or an object such as {\"type\": \"function\", \"name\": ...}", *v);
    const std::string type = required_string(*v, "type", "tool_choice");
    if (type != "function") {
        fail("tool_choice.type", "'" + type + "' is not supported here (only function tools can be called: "
                                              "{\"type\": \"function\", \"name\": ...})");
    }
    choice.mode = ToolChoice::Mode::function;
    choice.function = required_string(*v, "name", "tool_choice");
    bool offered = false;
    for (const ToolDefinition& tool : tools) offered = offered || tool.name == choice.function;
    if (!offered) fail("tool_choice.name", "'" + choice.function + "' is not among the function tools");
    return choice;
}

// text.format: the same three kinds as chat's response_format.
ResponseFormat parse_text_format(const Json& root, Json& echoed) {
    ResponseFormat format;
    echoed = {{"format", {{"type", "text"}}}};
    const Json* text = field(root, "text");
    if (!text) return format;
    if (!text->is_object()) wrong_type("text", "an object such as {\"format\": {\"type\": \"json_schema\", ...}}", *text);
    const Json* spec = field(*text, "format");
    if (!spec) return format;
    if (!spec->is_object()) wrong_type("text.format", "an object", *spec);
    echoed["format"] = *spec;
    const std::string type = required_string(*spec, "type", "text.format");
    if (type == "text") return format;
    if (type == "json_object") {
        format.type = ResponseFormat::Type::json_object;
        return format;
    }
    if (type != "json_schema") fail("text.format.type", "'" + type + "' is not one of text, json_object, json_schema");
    format.type = ResponseFormat::Type::json_schema;
    format.name = string(*spec, "name", "text.format").value_or("");
    const Json* schema = field(*spec, "schema");
    if (!schema) fail("text.format.schema", "required (a JSON Schema object)");
    if (!schema->is_object()) wrong_type("text.format.schema", "an object (a JSON Schema)", *schema);
    // ordered_json keeps the schema's property order, which the output follows.
    format.schema_json = schema->dump();
    format.strict = boolean(*spec, "strict", "text.format").value_or(false);
    return format;
}

SamplingFields parse_sampling(const Json& root) {
    SamplingFields s;
    if (auto v = integer(root, "max_output_tokens")) {
        if (*v < 1 || *v > kMaxTokensLimit) {
            fail("max_output_tokens", std::to_string(*v) + " must be between 1 and " + std::to_string(kMaxTokensLimit));
        }
        s.max_tokens = static_cast<int32_t>(*v);
    }
    if (auto v = number(root, "temperature")) {
        if (!(*v >= 0 && *v <= 2)) fail("temperature", std::to_string(*v) + " is outside [0, 2]");
        s.temperature = static_cast<float>(*v);
    }
    if (auto v = number(root, "top_p")) {
        if (!(*v > 0 && *v <= 1)) fail("top_p", std::to_string(*v) + " is outside (0, 1]");
        s.top_p = static_cast<float>(*v);
    }
    if (auto v = integer(root, "top_logprobs"); v && *v != 0) {
        fail("top_logprobs", "logprobs are not supported on /v1/responses (use /v1/chat/completions)");
    }
    s.stream = boolean(root, "stream").value_or(false);
    // This server's extension, as on chat completions: the reply's token ids.
    s.return_token_ids = boolean(root, "return_token_ids").value_or(false);
    return s;
}

std::optional<bool> parse_reasoning(const Json& root, Json& echoed) {
    echoed = {{"effort", nullptr}, {"summary", nullptr}};
    const Json* v = field(root, "reasoning");
    if (!v) return std::nullopt;
    if (!v->is_object()) wrong_type("reasoning", "an object such as {\"effort\": \"medium\"}", *v);
    const std::optional<std::string> effort = string(*v, "effort", "reasoning");
    if (effort && *effort != "none" && *effort != "minimal" && *effort != "low" && *effort != "medium" && *effort != "high") {
        fail("reasoning.effort", "'" + *effort + "' is not one of none, minimal, low, medium, high");
    }
    if (const std::optional<std::string> summary = string(*v, "summary", "reasoning")) echoed["summary"] = *summary;
    if (!effort) return std::nullopt;
    echoed["effort"] = *effort;
    // The effort is not a budget here: a model thinks or does not.
    return *effort != "none";
}

// Fields that are accepted as clients send them, checked only for type.
void check_accepted(const Json& root) {
    (void)boolean(root, "store");
    (void)string(root, "prompt_cache_key");
    (void)string(root, "user");
    (void)string(root, "safety_identifier");
    (void)string(root, "service_tier");
    if (const Json* v = field(root, "metadata"); v && !v->is_object()) wrong_type("metadata", "an object", *v);
    if (const Json* v = field(root, "include"); v && !v->is_array()) wrong_type("include", "an array of strings", *v);
    if (auto v = string(root, "truncation"); v && *v != "disabled" && *v != "auto") {
        fail("truncation", "'" + *v + "' is not one of disabled, auto");
    }
}

}  // namespace

ResponsesRequest parse_responses_request(std::string_view body) {
    const Json root = parse_object(body);
    refuse_stateful(root);
    ResponsesRequest request;
    ChatRequest& chat = request.chat;
    chat.model = string(root, "model").value_or("");
    const std::optional<std::string> instructions = string(root, "instructions");
    Conversation conversation;
    if (instructions && !instructions->empty()) conversation.messages.push_back({"system", *instructions});
    const Json* input = field(root, "input");
    if (!input) fail("input", "required (a string, or an array of input items)");
    conversation.add_input(*input);
    chat.messages = std::move(conversation.messages);

    Json echoed = Json::object();
    Json tools_echoed;
    Json tool_choice_echoed;
    Json text_echoed;
    Json reasoning_echoed;
    chat.tools = parse_tools(root, tools_echoed);
    chat.tool_choice = parse_tool_choice(root, chat.tools, tool_choice_echoed);
    chat.parallel_tool_calls = boolean(root, "parallel_tool_calls").value_or(true);
    chat.sampling = parse_sampling(root);
    chat.sampling.response_format = parse_text_format(root, text_echoed);
    request.thinking = parse_reasoning(root, reasoning_echoed);
    check_accepted(root);

    echoed["instructions"] = instructions ? Json(*instructions) : Json(nullptr);
    echoed["max_output_tokens"] = chat.sampling.max_tokens ? Json(*chat.sampling.max_tokens) : Json(nullptr);
    echoed["parallel_tool_calls"] = chat.parallel_tool_calls;
    echoed["previous_response_id"] = nullptr;
    echoed["reasoning"] = std::move(reasoning_echoed);
    echoed["store"] = false;  // nothing is kept, whatever was asked
    echoed["temperature"] = chat.sampling.temperature;
    echoed["text"] = std::move(text_echoed);
    echoed["tool_choice"] = std::move(tool_choice_echoed);
    echoed["tools"] = std::move(tools_echoed);
    echoed["top_p"] = chat.sampling.top_p;
    echoed["truncation"] = string(root, "truncation").value_or("disabled");
    echoed["user"] = field(root, "user") ? root["user"] : Json(nullptr);
    echoed["metadata"] = field(root, "metadata") ? root["metadata"] : Json::object();
    echoed["prompt_cache_key"] = field(root, "prompt_cache_key") ? root["prompt_cache_key"] : Json(nullptr);
    request.echoed_json = echoed.dump();
    return request;
}

}  // namespace tf::http
