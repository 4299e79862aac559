#include "http/openai_request.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>
#include <nlohmann/json.hpp>

namespace tf::http {

namespace {

using json = nlohmann::ordered_json;  // keys in the order the client wrote them: they reach the template

// Largest request numbers we take literally; beyond these a value is absurd.
constexpr int64_t kMaxTokensLimit = 1 << 24;
constexpr int kMaxStopStrings = 16;
// Each choice is a stream of its own; more than this is a mistake, not a use.
constexpr int64_t kMaxChoices = 32;
// OpenAI allows 20 alternatives per position (engine::kMaxTopLogprobs).
constexpr int64_t kMaxLogprobs = 20;

const char* type_name(const json& value) {
    switch (value.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned: return "an integer";
        case json::value_t::number_float: return "a number";
        case json::value_t::string: return "a string";
        case json::value_t::array: return "an array";
        case json::value_t::object: return "an object";
        default: return "an unknown value";
    }
}

[[noreturn]] void wrong_type(const std::string& field, const char* expected, const json& got) {
    throw bad_request(field, field + ": expected " + expected + ", got " + type_name(got));
}

json parse_object(std::string_view body) {
    json root = json::parse(body, nullptr, false);
    if (root.is_discarded()) throw bad_request("", "request body is not valid JSON");
    if (!root.is_object()) throw bad_request("", std::string("request body: expected a JSON object, got ") + type_name(root));
    return root;
}

// A field that is absent or null counts as not given.
const json* field(const json& root, const char* name) {
    auto it = root.find(name);
    return it == root.end() || it->is_null() ? nullptr : &*it;
}

std::optional<int64_t> integer(const json& root, const char* name) {
    const json* v = field(root, name);
    if (!v) return std::nullopt;
    if (v->is_number_integer() || v->is_number_unsigned()) return v->get<int64_t>();
    if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() && std::abs(v->get<double>()) < 1e15) {
        return static_cast<int64_t>(v->get<double>());
    }
    wrong_type(name, "an integer", *v);
}

std::optional<double> number(const json& root, const char* name) {
    const json* v = field(root, name);
    if (!v) return std::nullopt;
    if (!v->is_number()) wrong_type(name, "a number", *v);
    return v->get<double>();
}

std::optional<bool> boolean(const json& root, const char* name) {
    const json* v = field(root, name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
    return v->get<bool>();
}

// Absent: empty.
std::string optional_string(const json& root, const char* name) {
    const json* v = field(root, name);
    if (!v) return {};
    if (!v->is_string()) wrong_type(name, "a string", *v);
    return v->get<std::string>();
}

std::string format_number(double value) {
    std::ostringstream out;
    out.precision(10);
    out << value;
    return out.str();
}

void check_range(const char* name, double value, double low, double high) {
    if (!(value >= low && value <= high)) {
        throw bad_request(name, std::string(name) + ": " + format_number(value) + " is outside [" +
                                    format_number(low) + ", " + format_number(high) + "]");
    }
}

// Features a client may ask for that the server does not have: refuse
// rather than silently answer something else.
void refuse_unsupported(const json& root) {
    if (auto best_of = integer(root, "best_of"); best_of && *best_of != 1) {
        throw bad_request("best_of", "best_of: only 1 is supported");
    }
    for (const char* name : {"presence_penalty", "frequency_penalty"}) {
        if (auto v = number(root, name); v && *v != 0) throw bad_request(name, std::string(name) + ": not supported");
    }
    if (const json* v = field(root, "logit_bias"); v && !(v->is_object() && v->empty())) {
        throw bad_request("logit_bias", "logit_bias: not supported");
    }
}

SamplingFields parse_sampling(const json& root, const char* max_tokens_field) {
    SamplingFields s;
    std::optional<int64_t> max_tokens = integer(root, max_tokens_field);
    if (!max_tokens && std::string_view(max_tokens_field) == "max_completion_tokens") {
        max_tokens = integer(root, "max_tokens");
        max_tokens_field = "max_tokens";
    }
    if (max_tokens) {
        if (*max_tokens < 1 || *max_tokens > kMaxTokensLimit) {
            throw bad_request(max_tokens_field, std::string(max_tokens_field) + ": " + std::to_string(*max_tokens) +
                                                    " must be between 1 and " + std::to_string(kMaxTokensLimit));
        }
        s.max_tokens = static_cast<int32_t>(*max_tokens);
    }
    if (auto v = number(root, "temperature")) {
        check_range("temperature", *v, 0, 2);
        s.temperature = static_cast<float>(*v);
    }
    if (auto v = number(root, "top_p")) {
        if (!(*v > 0 && *v <= 1)) throw bad_request("top_p", "top_p: " + format_number(*v) + " is outside (0, 1]");
        s.top_p = static_cast<float>(*v);
    }
    if (auto v = integer(root, "top_k")) {
        if (*v < -1 || *v > std::numeric_limits<int32_t>::max()) {
            throw bad_request("top_k", "top_k: " + std::to_string(*v) + " must be -1, 0 (no limit) or positive");
        }
        s.top_k = *v < 0 ? 0 : static_cast<int32_t>(*v);
    }
    if (auto v = number(root, "min_p")) {
        check_range("min_p", *v, 0, 1);
        s.min_p = static_cast<float>(*v);
    }
    if (auto n = integer(root, "n")) {
        if (*n < 1 || *n > kMaxChoices) {
            throw bad_request("n", "n: " + std::to_string(*n) + " must be between 1 and " + std::to_string(kMaxChoices));
        }
        s.n = static_cast<int32_t>(*n);
    }
    if (const json* v = field(root, "seed")) {
        if (!v->is_number_integer() && !v->is_number_unsigned()) wrong_type("seed", "an integer", *v);
        s.seed = v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
    }
    if (const json* v = field(root, "stop")) {
        if (v->is_string()) {
            s.stop.push_back(v->get<std::string>());
        } else if (v->is_array()) {
            if (v->size() > kMaxStopStrings) {
                throw bad_request("stop", "stop: at most " + std::to_string(kMaxStopStrings) + " stop strings");
            }
            for (const json& item : *v) {
                if (!item.is_string()) wrong_type("stop", "a string or an array of strings", item);
                s.stop.push_back(item.get<std::string>());
            }
        } else {
            wrong_type("stop", "a string or an array of strings", *v);
        }
        for (const std::string& stop : s.stop) {
            if (stop.empty()) throw bad_request("stop", "stop: stop strings must not be empty");
        }
    }
    s.stream = boolean(root, "stream").value_or(false);
    if (const json* v = field(root, "stream_options")) {
        if (!v->is_object()) wrong_type("stream_options", "an object", *v);
        s.include_usage = boolean(*v, "include_usage").value_or(false);
    }
    s.return_token_ids = boolean(root, "return_token_ids").value_or(false);
    return s;
}

// Completions: "logprobs": N alternatives (null or absent: none).
int32_t completion_logprobs(const json& root) {
    const json* v = field(root, "logprobs");
    if (!v || v->is_null()) return -1;
    if (!v->is_number_integer() && !v->is_number_unsigned()) wrong_type("logprobs", "an integer", *v);
    const int64_t n = v->get<int64_t>();
    if (n < 0 || n > kMaxLogprobs) {
        throw bad_request("logprobs", "logprobs: " + std::to_string(n) + " must be between 0 and " +
                                          std::to_string(kMaxLogprobs));
    }
    return static_cast<int32_t>(n);
}

// Chat: "logprobs": true, then "top_logprobs": N alternatives (default 0).
int32_t chat_logprobs(const json& root) {
    const bool wanted = boolean(root, "logprobs").value_or(false);
    const json* top = field(root, "top_logprobs");
    if (!top || top->is_null()) return wanted ? 0 : -1;
    if (!top->is_number_integer() && !top->is_number_unsigned()) wrong_type("top_logprobs", "an integer", *top);
    const int64_t n = top->get<int64_t>();
    if (n < 0 || n > kMaxLogprobs) {
        throw bad_request("top_logprobs", "top_logprobs: " + std::to_string(n) + " must be between 0 and " +
                                              std::to_string(kMaxLogprobs));
    }
    if (!wanted) throw bad_request("top_logprobs", "top_logprobs: needs \"logprobs\": true");
    return static_cast<int32_t>(n);
}

ResponseFormat parse_response_format(const json& root) {
    ResponseFormat format;
    const json* v = field(root, "response_format");
    if (!v || v->is_null()) return format;
    if (!v->is_object()) wrong_type("response_format", "an object", *v);
    const json* type = field(*v, "type");
    if (!type || !type->is_string()) throw bad_request("response_format", "response_format.type: required string");
    const std::string name = type->get<std::string>();
    if (name == "text") return format;
    if (name == "json_object") {
        format.type = ResponseFormat::Type::json_object;
        return format;
    }
    if (name != "json_schema") {
        throw bad_request("response_format", "response_format.type: '" + name +
                                                 "' is not one of text, json_object, json_schema");
    }
    format.type = ResponseFormat::Type::json_schema;
    const json* spec = field(*v, "json_schema");
    if (!spec || !spec->is_object()) {
        throw bad_request("response_format", "response_format.json_schema: required object");
    }
    const json* schema_name = field(*spec, "name");
    if (schema_name && !schema_name->is_string()) wrong_type("response_format.json_schema.name", "a string", *schema_name);
    if (schema_name) format.name = schema_name->get<std::string>();
    const json* schema = field(*spec, "schema");
    if (!schema) throw bad_request("response_format", "response_format.json_schema.schema: required object");
    if (!schema->is_object()) wrong_type("response_format.json_schema.schema", "an object", *schema);
    // Properties come out in the schema's order (docs/structured-output.md),
    // which the ordered parse of the body kept.
    format.schema_json = schema->dump();
    if (const json* strict = field(*spec, "strict"); strict && !strict->is_null()) {
        if (!strict->is_boolean()) wrong_type("response_format.json_schema.strict", "a boolean", *strict);
        format.strict = strict->get<bool>();
    }
    return format;
}

std::vector<int32_t> token_ids(const json& array, const std::string& where) {
    std::vector<int32_t> ids;
    ids.reserve(array.size());
    for (const json& item : array) {
        if (!item.is_number_integer() && !item.is_number_unsigned()) wrong_type(where, "token ids (integers)", item);
        const int64_t id = item.get<int64_t>();
        if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
            throw bad_request("prompt", where + ": token id " + std::to_string(id) + " is not a valid token id");
        }
        ids.push_back(static_cast<int32_t>(id));
    }
    return ids;
}

std::vector<PromptInput> parse_prompts(const json& root) {
    const json* v = field(root, "prompt");
    if (!v) throw bad_request("prompt", "prompt: required");
    std::vector<PromptInput> prompts;
    if (v->is_string()) {
        prompts.push_back({v->get<std::string>(), {}});
    } else if (v->is_array() && !v->empty() && ((*v)[0].is_number_integer() || (*v)[0].is_number_unsigned())) {
        prompts.push_back({std::nullopt, token_ids(*v, "prompt")});
    } else if (v->is_array() && !v->empty()) {
        for (size_t i = 0; i < v->size(); ++i) {
            const json& item = (*v)[i];
            const std::string where = "prompt[" + std::to_string(i) + "]";
            if (item.is_string()) {
                prompts.push_back({item.get<std::string>(), {}});
            } else if (item.is_array()) {
                prompts.push_back({std::nullopt, token_ids(item, where)});
            } else {
                wrong_type(where, "a string or an array of token ids", item);
            }
        }
    } else if (v->is_array()) {
        throw bad_request("prompt", "prompt: must not be an empty array");
    } else {
        wrong_type("prompt", "a string, an array of strings, or token ids", *v);
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
        if (!prompts[i].text && prompts[i].ids.empty()) {
            throw bad_request("prompt", "prompt[" + std::to_string(i) + "]: must not be empty");
        }
    }
    return prompts;
}

std::string message_content(const json& content, const std::string& where) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) wrong_type(where, "a string or an array of content parts", content);
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const json& part = content[i];
        const std::string part_where = where + "[" + std::to_string(i) + "]";
        if (!part.is_object()) wrong_type(part_where, "an object", part);
        const json* type = field(part, "type");
        if (!type || !type->is_string() || type->get<std::string>() != "text") {
            throw bad_request("messages", part_where + ".type: only \"text\" parts are supported");
        }
        const json* part_text = field(part, "text");
        if (!part_text || !part_text->is_string()) throw bad_request("messages", part_where + ".text: required string");
        text += part_text->get<std::string>();
    }
    return text;
}

// What a required string field holds; a 400 naming `where` otherwise.
std::string required_string(const json& object, const char* name, const std::string& where) {
    const json* v = field(object, name);
    if (!v) throw bad_request(where.substr(0, where.find_first_of(".[")), where + ": required");
    if (!v->is_string()) wrong_type(where, "a string", *v);
    return v->get<std::string>();
}

// OpenAI's rule for function names; templates also print them unquoted.
bool valid_function_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
    }
    return true;
}

// An assistant's tool_calls and a tool message's tool_call_id and name.
void parse_message_tool_fields(const json& m, const std::string& where, ChatMessage& message) {
    if (const json* id = field(m, "tool_call_id")) {
        if (!id->is_string()) wrong_type(where + ".tool_call_id", "a string", *id);
        message.tool_call_id = id->get<std::string>();
    }
    if (const json* name = field(m, "name")) {
        if (!name->is_string()) wrong_type(where + ".name", "a string", *name);
        message.name = name->get<std::string>();
    }
    const json* calls = field(m, "tool_calls");
    if (!calls) return;
    if (!calls->is_array()) wrong_type(where + ".tool_calls", "an array", *calls);
    if (!calls->empty() && message.role != "assistant") {
        throw bad_request("messages", where + ".tool_calls: only assistant messages carry tool calls");
    }
    for (size_t c = 0; c < calls->size(); ++c) {
        const json& call = (*calls)[c];
        const std::string at = where + ".tool_calls[" + std::to_string(c) + "]";
        if (!call.is_object()) wrong_type(at, "an object", call);
        if (const json* type = field(call, "type"); type && *type != "function") {
            throw bad_request("messages", at + ".type: must be \"function\"");
        }
        tokenizer::ToolCall parsed;
        if (const json* id = field(call, "id")) {
            if (!id->is_string()) wrong_type(at + ".id", "a string", *id);
            parsed.id = id->get<std::string>();
        }
        const json* function = field(call, "function");
        if (!function) throw bad_request("messages", at + ".function: required");
        if (!function->is_object()) wrong_type(at + ".function", "an object", *function);
        parsed.name = required_string(*function, "name", at + ".function.name");
        // OpenAI sends arguments as a string of JSON; some clients send the
        // object itself. Either way the template gets the object when there
        // is one.
        if (const json* arguments = field(*function, "arguments")) {
            if (arguments->is_object()) {
                parsed.arguments_json = arguments->dump();
            } else if (arguments->is_string()) {
                const json object = json::parse(arguments->get<std::string>(), nullptr, false);
                parsed.arguments_json = !object.is_discarded() && object.is_object() ? object.dump() : arguments->dump();
            } else {
                wrong_type(at + ".function.arguments", "a string of JSON", *arguments);
            }
        }
        message.tool_calls.push_back(std::move(parsed));
    }
}

std::vector<ToolDefinition> parse_tools(const json& root) {
    std::vector<ToolDefinition> tools;
    const json* list = field(root, "tools");
    if (!list) return tools;
    if (!list->is_array()) wrong_type("tools", "an array", *list);
    for (size_t i = 0; i < list->size(); ++i) {
        const json& entry = (*list)[i];
        const std::string where = "tools[" + std::to_string(i) + "]";
        if (!entry.is_object()) wrong_type(where, "an object", entry);
        if (required_string(entry, "type", where + ".type") != "function") {
            throw bad_request("tools", where + ".type: must be \"function\" (the only kind of tool)");
        }
        const json* function = field(entry, "function");
        if (!function) throw bad_request("tools", where + ".function: required");
        if (!function->is_object()) wrong_type(where + ".function", "an object", *function);
        ToolDefinition tool;
        tool.name = required_string(*function, "name", where + ".function.name");
        if (!valid_function_name(tool.name)) {
            throw bad_request("tools", where + ".function.name: '" + tool.name +
                                           "' must be 1 to 64 letters, digits, underscores or dashes");
        }
        for (const ToolDefinition& earlier : tools) {
            if (earlier.name == tool.name) {
                throw bad_request("tools", where + ".function.name: '" + tool.name + "' is defined twice");
            }
        }
        tool.description = optional_string(*function, "description");
        if (const json* parameters = field(*function, "parameters")) {
            if (!parameters->is_object()) wrong_type(where + ".function.parameters", "an object (a JSON Schema)", *parameters);
            tool.parameters_json = parameters->dump();
        }
        tool.entry_json = entry.dump();
        tools.push_back(std::move(tool));
    }
    return tools;
}

ToolChoice parse_tool_choice(const json& root, const std::vector<ToolDefinition>& tools) {
    ToolChoice choice;
    choice.mode = tools.empty() ? ToolChoice::Mode::none : ToolChoice::Mode::automatic;
    const json* v = field(root, "tool_choice");
    if (!v) return choice;
    if (v->is_string()) {
        const std::string mode = v->get<std::string>();
        if (mode == "none") {
            choice.mode = ToolChoice::Mode::none;
        } else if (mode == "auto") {
            // Without tools there is nothing to call: the same as none.
        } else if (mode == "required") {
            choice.mode = ToolChoice::Mode::required;
        } else {
            throw bad_request("tool_choice", "tool_choice: '" + mode + "' is not one of none, auto, required, or " +
                                                 R"({"type": "function", "function": {"name": ...}})");
        }
    } else if (v->is_object()) {
        if (const json* type = field(*v, "type"); !type || *type != "function") {
            throw bad_request("tool_choice", "tool_choice.type: must be \"function\"");
        }
        const json* function = field(*v, "function");
        if (!function) throw bad_request("tool_choice", "tool_choice.function: required");
        if (!function->is_object()) wrong_type("tool_choice.function", "an object", *function);
        choice.mode = ToolChoice::Mode::function;
        choice.function = required_string(*function, "name", "tool_choice.function.name");
        bool offered = false;
        for (const ToolDefinition& tool : tools) offered = offered || tool.name == choice.function;
        if (!offered) {
            throw bad_request("tool_choice", "tool_choice.function.name: '" + choice.function + "' is not among tools");
        }
    } else {
        wrong_type("tool_choice", "a string or an object", *v);
    }
    if (choice.mode == ToolChoice::Mode::required && tools.empty()) {
        throw bad_request("tool_choice", "tool_choice: \"required\" needs tools to call");
    }
    return choice;
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view body) {
    const json root = parse_object(body);
    CompletionRequest request;
    request.model = optional_string(root, "model");
    request.prompts = parse_prompts(root);
    request.echo = boolean(root, "echo").value_or(false);
    if (const json* suffix = field(root, "suffix")) {
        if (!suffix->is_string()) wrong_type("suffix", "a string", *suffix);
        request.suffix = suffix->get<std::string>();
    }
    refuse_unsupported(root);
    if (const json* v = field(root, "tools"); v && !(v->is_array() && v->empty())) {
        throw bad_request("tools", "tools: not supported on /v1/completions; use /v1/chat/completions");
    }
    request.sampling = parse_sampling(root, "max_tokens");
    request.sampling.logprobs = completion_logprobs(root);
    request.sampling.response_format = parse_response_format(root);
    return request;
}

ChatRequest parse_chat_request(std::string_view body) {
    const json root = parse_object(body);
    ChatRequest request;
    request.model = optional_string(root, "model");
    const json* messages = field(root, "messages");
    if (!messages) throw bad_request("messages", "messages: required");
    if (!messages->is_array()) wrong_type("messages", "an array", *messages);
    if (messages->empty()) throw bad_request("messages", "messages: must hold at least one message");
    for (size_t i = 0; i < messages->size(); ++i) {
        const json& m = (*messages)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) wrong_type(where, "an object", m);
        const json* role = field(m, "role");
        if (!role || !role->is_string()) throw bad_request("messages", where + ".role: required string");
        const std::string r = role->get<std::string>();
        if (r != "system" && r != "user" && r != "assistant" && r != "tool" && r != "developer") {
            throw bad_request("messages", where + ".role: '" + r + "' is not one of system, user, assistant, tool, developer");
        }
        const json* content = field(m, "content");
        ChatMessage message{r, content ? message_content(*content, where + ".content") : std::string()};
        parse_message_tool_fields(m, where, message);
        // The thoughts an earlier reply came with, given back so templates
        // that show them (Qwen3) render the turn as it was generated.
        // Under either name a reply carries them (openai_response.cpp).
        for (const char* key : {"reasoning_content", "reasoning"}) {
            const json* reasoning = field(m, key);
            if (!reasoning || message.reasoning_content) continue;
            if (!reasoning->is_string()) wrong_type(where + "." + key, "a string", *reasoning);
            message.reasoning_content = reasoning->get<std::string>();
        }
        request.messages.push_back(std::move(message));
    }
    request.add_generation_prompt = boolean(root, "add_generation_prompt").value_or(true);
    // vLLM's and llama.cpp's chat_template_kwargs: further template
    // variables, such as Qwen3's enable_thinking.
    if (const json* kwargs = field(root, "chat_template_kwargs")) {
        if (!kwargs->is_object()) wrong_type("chat_template_kwargs", "an object", *kwargs);
        for (const auto& [name, value] : kwargs->items()) request.template_variables.emplace_back(name, value.dump());
    }
    request.tools = parse_tools(root);
    request.tool_choice = parse_tool_choice(root, request.tools);
    request.parallel_tool_calls = boolean(root, "parallel_tool_calls").value_or(true);
    refuse_unsupported(root);
    request.sampling = parse_sampling(root, "max_completion_tokens");
    request.sampling.logprobs = chat_logprobs(root);
    request.sampling.response_format = parse_response_format(root);
    return request;
}

}  // namespace tf::http
