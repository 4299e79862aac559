#include "http/tool_calls.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>

namespace tf::http {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

// How many bytes at the end of `text` could be the start of `tag`: they
// must wait for the next piece before they can be sent as content.
size_t partial_tag_at_end(std::string_view text, std::string_view tag) {
    for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
        if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
    }
    return 0;
}

struct CallText {
    std::string name;
    std::string arguments;
};

// `{"name": ..., "arguments"|"parameters": {...}}`, nothing else around it.
// Arguments given as a string must hold an object (some models quote
// them); absent arguments are an empty object (a function without
// parameters). Anything else is not a call.
std::optional<CallText> parse_call(std::string_view body) {
    const json call = json::parse(trim(body), nullptr, false);
    if (call.is_discarded() || !call.is_object()) return std::nullopt;
    auto name = call.find("name");
    if (name == call.end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
    auto arguments = call.find("arguments");
    if (arguments == call.end()) arguments = call.find("parameters");
    json object = json::object();
    if (arguments != call.end() && !arguments->is_null()) {
        object = arguments->is_string() ? json::parse(arguments->get<std::string>(), nullptr, false) : *arguments;
        if (object.is_discarded() || !object.is_object()) return std::nullopt;
    }
    for (auto it = call.begin(); it != call.end(); ++it) {
        if (it.key() != "name" && it.key() != "arguments" && it.key() != "parameters") return std::nullopt;
    }
    return CallText{name->get<std::string>(), object.dump(-1, ' ', false, json::error_handler_t::replace)};
}

ReplyDelta content_delta(std::string text) {
    ReplyDelta d;
    d.content = std::move(text);
    return d;
}

ReplyDelta call_delta(int32_t index, bool opens) {
    ReplyDelta d;
    d.is_tool_call = true;
    d.index = index;
    d.opens = opens;
    return d;
}

}  // namespace

ToolCallFormat tool_call_format(std::string_view template_source) {
    if (template_source.find(kOpen) != std::string_view::npos) return ToolCallFormat::hermes;
    if (template_source.find(kPythonTag) != std::string_view::npos ||
        template_source.find("ipython") != std::string_view::npos) {
        return ToolCallFormat::llama3;
    }
    return ToolCallFormat::none;
}

const char* to_string(ToolCallFormat format) {
    switch (format) {
        case ToolCallFormat::hermes: return "hermes";
        case ToolCallFormat::llama3: return "llama3";
        default: return "none";
    }
}

std::string random_tool_call_id() {
    thread_local std::mt19937_64 generator{std::random_device{}()};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) id += kHex[generator() & 15];
    return id;
}

ToolCallStream::ToolCallStream(ToolCallFormat format, ToolCallIds ids) : format_(format), ids_(std::move(ids)) {}

std::vector<ReplyDelta> ToolCallStream::feed(std::string_view text) {
    std::vector<ReplyDelta> out;
    pending_ += text;
    process(false, out);
    return out;
}

std::vector<ReplyDelta> ToolCallStream::finish() {
    std::vector<ReplyDelta> out;
    process(true, out);
    // Whitespace after the last call separates nothing; without calls it is
    // the reply's own text.
    if (calls_ == 0 && !held_space_.empty()) out.push_back(content_delta(std::move(held_space_)));
    held_space_.clear();
    return out;
}

void ToolCallStream::process(bool final, std::vector<ReplyDelta>& out) {
    switch (format_) {
        case ToolCallFormat::hermes: return process_hermes(final, out);
        case ToolCallFormat::llama3: return process_llama3(final, out);
        default:
            if (!pending_.empty()) out.push_back(content_delta(std::move(pending_)));
            pending_.clear();
    }
}

void ToolCallStream::process_hermes(bool final, std::vector<ReplyDelta>& out) {
    for (;;) {
        if (!in_call_) {
            const size_t open = pending_.find(kOpen);
            if (open == std::string::npos) {
                const size_t keep = final ? 0 : partial_tag_at_end(pending_, kOpen);
                emit_content(std::string_view(pending_).substr(0, pending_.size() - keep), out);
                pending_.erase(0, pending_.size() - keep);
                return;
            }
            emit_content(std::string_view(pending_).substr(0, open), out);
            pending_.erase(0, open + kOpen.size());
            space_before_ = std::move(held_space_);
            held_space_.clear();
            in_call_ = true;
            continue;
        }
        const size_t close = pending_.find(kClose);
        // A reply that ends inside a call (a stop string cut the close tag)
        // still made the call when what it holds parses.
        if (close == std::string::npos && !final) return;
        const size_t body_end = close == std::string::npos ? pending_.size() : close;
        const size_t end = close == std::string::npos ? pending_.size() : close + kClose.size();
        const std::string_view body = std::string_view(pending_).substr(0, body_end);
        if (!emit_call(body, out)) {
            emit_content(space_before_ + std::string(kOpen) + pending_.substr(0, end), out);
        }
        space_before_.clear();
        pending_.erase(0, end);
        in_call_ = false;
        if (final && pending_.empty()) return;
    }
}

void ToolCallStream::process_llama3(bool final, std::vector<ReplyDelta>& out) {
    if (!decided_) {
        const std::string_view start = trim(pending_);
        if (start.empty() && !final) return;
        // Only a reply that opens with the call can be one: hold it whole.
        const bool may_be_call = !start.empty() && (start.front() == '{' || start.starts_with(kPythonTag) ||
                                                    kPythonTag.starts_with(start));
        if (may_be_call && !final) return;
        if (may_be_call) {
            std::string_view body = start;
            if (body.starts_with(kPythonTag)) body.remove_prefix(kPythonTag.size());
            if (emit_call(body, out)) {
                pending_.clear();
                return;
            }
        }
        decided_ = true;
    }
    emit_content(pending_, out);
    pending_.clear();
}

// Content goes out at once except its trailing whitespace, which waits to
// see whether a call follows (then it was a separator).
void ToolCallStream::emit_content(std::string_view text, std::vector<ReplyDelta>& out) {
    if (text.empty()) return;
    std::string whole = held_space_ + std::string(text);
    held_space_.clear();
    const size_t last = whole.find_last_not_of(" \n\t\r");
    if (last == std::string::npos) {
        held_space_ = std::move(whole);
        return;
    }
    held_space_ = whole.substr(last + 1);
    whole.resize(last + 1);
    // Content that follows calls, with none before them, starts at its text.
    if (!content_sent_ && calls_ > 0) whole.erase(0, whole.find_first_not_of(" \n\t\r"));
    content_sent_ = true;
    if (!out.empty() && !out.back().is_tool_call) {
        out.back().content += whole;
    } else {
        out.push_back(content_delta(std::move(whole)));
    }
}

bool ToolCallStream::emit_call(std::string_view body, std::vector<ReplyDelta>& out) {
    std::optional<CallText> call = parse_call(body);
    if (!call) return false;
    const int32_t index = calls_++;
    ReplyDelta opening = call_delta(index, true);
    opening.id = ids_();
    opening.name = std::move(call->name);
    out.push_back(std::move(opening));
    ReplyDelta arguments = call_delta(index, false);
    arguments.arguments = std::move(call->arguments);
    out.push_back(std::move(arguments));
    // Whitespace between content and this call, kept only as a separator
    // for content that comes after.
    if (content_sent_) held_space_ = std::move(space_before_);
    space_before_.clear();
    return true;
}

ParsedReply parse_tool_calls(std::string_view text, ToolCallFormat format, ToolCallIds ids) {
    ToolCallStream stream(format, std::move(ids));
    std::vector<ReplyDelta> deltas = stream.feed(text);
    for (ReplyDelta& d : stream.finish()) deltas.push_back(std::move(d));
    ParsedReply reply;
    for (ReplyDelta& d : deltas) {
        if (!d.is_tool_call) {
            reply.content += d.content;
        } else if (d.opens) {
            reply.tool_calls.push_back({std::move(d.id), std::move(d.name), ""});
        } else {
            reply.tool_calls.at(static_cast<size_t>(d.index)).arguments += d.arguments;
        }
    }
    return reply;
}

namespace {

// A forced call's arguments take only the properties the tool declares,
// as OpenAI's strict function calling has them: an object schema that says
// nothing about other keys gets "additionalProperties": false. Left open, a
// model may write made-up keys until max_tokens cuts the call in half.
void close_objects(ordered_json& schema) {
    if (!schema.is_object()) return;
    const bool is_object_type = schema.contains("properties") ||
                                (schema.contains("type") && schema["type"] == "object");
    if (is_object_type && !schema.contains("additionalProperties")) {
        if (!schema.contains("properties")) schema["properties"] = ordered_json::object();
        schema["additionalProperties"] = false;
    }
    for (const char* key : {"properties", "$defs", "definitions"}) {
        if (schema.contains(key) && schema[key].is_object()) {
            for (auto& [name, child] : schema[key].items()) close_objects(child);
        }
    }
    if (schema.contains("items")) close_objects(schema["items"]);
    for (const char* key : {"anyOf", "oneOf"}) {
        if (schema.contains(key) && schema[key].is_array()) {
            for (ordered_json& child : schema[key]) close_objects(child);
        }
    }
}

}  // namespace

ForcedToolCall forced_tool_call(ToolCallFormat format, const std::vector<ToolSchema>& tools, const std::string* only) {
    if (format == ToolCallFormat::none) throw std::invalid_argument("forced_tool_call: the template has no tool-call format");
    const char* arguments_key = format == ToolCallFormat::llama3 ? "parameters" : "arguments";
    // Ordered, so that a grammar that follows the schema's property order
    // has the model write the name first, as the template shows it.
    ordered_json choices = ordered_json::array();
    for (const ToolSchema& tool : tools) {
        if (only && tool.name != *only) continue;
        ordered_json parameters = tool.parameters_json.empty() ? ordered_json{{"type", "object"}}
                                                               : ordered_json::parse(tool.parameters_json);
        close_objects(parameters);
        ordered_json properties = ordered_json::object();
        properties["name"] = {{"const", tool.name}};
        properties[arguments_key] = std::move(parameters);
        choices.push_back({{"type", "object"},
                           {"properties", std::move(properties)},
                           {"required", ordered_json::array({"name", arguments_key})},
                           {"additionalProperties", false}});
    }
    if (choices.empty()) throw std::invalid_argument("forced_tool_call: no tool to call");
    ForcedToolCall forced;
    forced.schema_json = only ? choices[0].dump() : ordered_json{{"anyOf", std::move(choices)}}.dump();
    if (format == ToolCallFormat::hermes) {
        forced.prefix = std::string(kOpen) + "\n";
        forced.suffix = "\n" + std::string(kClose);
    }
    return forced;
}

}  // namespace tf::http
