#include "http/tool_calls.h"

#include <initializer_list>
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

// Where a call's body stands while it streams in: does it open as
// `{"name": "<name>", "arguments": {` (or "parameters"; whitespace between
// tokens allowed)?
struct CallHeader {
    enum class State { incomplete, other, found } state = State::incomplete;
    std::string name;
    size_t arguments_at = 0;  // found: the offset of the `{` that opens the arguments
};

CallHeader read_call_header(std::string_view body) {
    size_t at = 0;
    auto skip_space = [&] {
        while (at < body.size() && is_space(body[at])) ++at;
        return at < body.size();
    };
    // A literal: there whole, cut short by the end of the text, or not there.
    auto literal = [&](std::string_view word) {
        const std::string_view rest = body.substr(at);
        if (rest.starts_with(word)) {
            at += word.size();
            return CallHeader::State::found;
        }
        return word.starts_with(rest) ? CallHeader::State::incomplete : CallHeader::State::other;
    };
    auto literals = [&](std::initializer_list<std::string_view> words) {
        for (std::string_view word : words) {
            if (!skip_space()) return CallHeader::State::incomplete;
            if (const CallHeader::State state = literal(word); state != CallHeader::State::found) return state;
        }
        return CallHeader::State::found;
    };
    if (const CallHeader::State state = literals({"{", "\"name\"", ":"}); state != CallHeader::State::found) return {state};
    if (!skip_space()) return {};
    if (body[at] != '"') return {CallHeader::State::other};
    const size_t name_start = at++;
    for (bool escaped = false; at < body.size() && (escaped || body[at] != '"'); ++at) escaped = !escaped && body[at] == '\\';
    if (at >= body.size()) return {};
    const json name = json::parse(body.substr(name_start, ++at - name_start), nullptr, false);
    if (name.is_discarded() || !name.is_string() || name.get<std::string>().empty()) return {CallHeader::State::other};
    if (const CallHeader::State state = literals({","}); state != CallHeader::State::found) return {state};
    // The arguments' key: hermes templates write "arguments", Llama 3's "parameters".
    if (!skip_space()) return {};
    const size_t key_at = at;
    CallHeader::State key = literal("\"arguments\"");
    if (key != CallHeader::State::found) {
        at = key_at;
        const CallHeader::State other_key = literal("\"parameters\"");
        if (other_key == CallHeader::State::found || key == CallHeader::State::other) key = other_key;
    }
    if (key != CallHeader::State::found) return {key};
    if (const CallHeader::State state = literals({":", "{"}); state != CallHeader::State::found) return {state};
    return {CallHeader::State::found, name.get<std::string>(), at - 1};
}

// The arguments of a call in the `{"name": ..., "arguments": {...}}` form,
// as the model wrote them: the same text a stream of it sends.
std::optional<std::string> raw_arguments(std::string_view body) {
    const CallHeader header = read_call_header(body);
    if (header.state != CallHeader::State::found) return std::nullopt;
    JsonDepth depth;
    for (size_t i = header.arguments_at; i < body.size(); ++i) {
        if (depth.take(body[i])) return std::string(body.substr(header.arguments_at, i + 1 - header.arguments_at));
    }
    return std::nullopt;
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
    // The model's own text where it wrote the arguments as an object after
    // the name, so a whole reply and a stream of it (which sends that text
    // as it comes) agree; a normalized object otherwise.
    if (std::optional<std::string> raw = raw_arguments(trim(body))) return CallText{name->get<std::string>(), std::move(*raw)};
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

bool JsonDepth::take(char c) {
    if (in_string) {
        if (escaped) {
            escaped = false;
        } else if (c == '\\') {
            escaped = true;
        } else if (c == '"') {
            in_string = false;
        }
        return false;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    return depth == 0;
}

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

std::vector<ReplyDelta> ToolCallStream::finish(std::string_view last) {
    std::vector<ReplyDelta> out;
    pending_ += last;
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
        if (streaming_ || (close == std::string::npos && !final && start_streaming(out))) {
            if (!stream_arguments(close, final, out)) return;
            continue;
        }
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
    if (streaming_) return stream_llama3_call(final, out);
    if (!decided_) {
        const std::string_view start = trim(pending_);
        if (start.empty() && !final) return;
        // Only a reply that opens with the call can be one: hold it until
        // its name and the opening of its parameters have come (then they
        // stream), or whole when it is in another shape.
        const bool may_be_call = !start.empty() && (start.front() == '{' || start.starts_with(kPythonTag) ||
                                                    kPythonTag.starts_with(start));
        if (may_be_call && !final) {
            const size_t body_at = static_cast<size_t>(start.data() - pending_.data()) +
                                   (start.starts_with(kPythonTag) ? kPythonTag.size() : 0);
            if (start_streaming(out, body_at)) {
                call_depth_ = JsonDepth{1};  // inside the call's own object
                stream_llama3_call(final, out);
            }
            return;
        }
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

// The streaming llama3 call's arguments as far as they have come; after
// their object, the rest of the call's own object is dropped (its closing
// brace, or keys the model added), and text after that is content.
void ToolCallStream::stream_llama3_call(bool final, std::vector<ReplyDelta>& out) {
    size_t taken = 0;
    while (!arguments_done_ && taken < pending_.size()) arguments_done_ = depth_.take(pending_[taken++]);
    if (taken > 0) {
        ReplyDelta piece = call_delta(calls_ - 1, false);
        piece.arguments = pending_.substr(0, taken);
        out.push_back(std::move(piece));
    }
    bool call_closed = false;
    while (arguments_done_ && !call_closed && taken < pending_.size()) call_closed = call_depth_.take(pending_[taken++]);
    pending_.erase(0, taken);
    // A reply cut inside the call (max_tokens) leaves it made, with the
    // arguments it has.
    if (!call_closed) {
        if (final) pending_.clear();
        return;
    }
    streaming_ = false;
    decided_ = true;
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

// A call still coming in whose header names the function and opens its
// arguments is taken as a call from then on, so its arguments can stream.
bool ToolCallStream::start_streaming(std::vector<ReplyDelta>& out, size_t body_at) {
    CallHeader header = read_call_header(std::string_view(pending_).substr(body_at));
    if (header.state != CallHeader::State::found) return false;
    open_call(std::move(header.name), out);
    pending_.erase(0, body_at + header.arguments_at);
    streaming_ = true;
    arguments_done_ = false;
    depth_ = {};
    return true;
}

// The streaming call's arguments as far as they have come, up to the end of
// their object; then what is left of the call up to its close tag (the
// body's last brace) is dropped. False while the call is still open.
bool ToolCallStream::stream_arguments(size_t close, bool final, std::vector<ReplyDelta>& out) {
    // A close tag cut short at the end waits for the next piece.
    const size_t limit = close != std::string::npos ? close
                         : final                    ? pending_.size()
                                                    : pending_.size() - partial_tag_at_end(pending_, kClose);
    size_t taken = 0;
    while (!arguments_done_ && taken < limit) arguments_done_ = depth_.take(pending_[taken++]);
    if (taken > 0) {
        ReplyDelta piece = call_delta(calls_ - 1, false);
        piece.arguments = pending_.substr(0, taken);
        out.push_back(std::move(piece));
    }
    if (close == std::string::npos && !final) {
        pending_.erase(0, limit);
        return false;
    }
    // The call ends here (or the reply did, cutting it short: it was made,
    // and its arguments are what was written).
    pending_.erase(0, close == std::string::npos ? pending_.size() : close + kClose.size());
    streaming_ = false;
    in_call_ = false;
    return !(final && pending_.empty());
}

void ToolCallStream::open_call(std::string name, std::vector<ReplyDelta>& out) {
    ReplyDelta opening = call_delta(calls_++, true);
    opening.id = ids_();
    opening.name = std::move(name);
    out.push_back(std::move(opening));
    // Whitespace between content and this call, kept only as a separator
    // for content that comes after.
    if (content_sent_) held_space_ = std::move(space_before_);
    space_before_.clear();
}

bool ToolCallStream::emit_call(std::string_view body, std::vector<ReplyDelta>& out) {
    std::optional<CallText> call = parse_call(body);
    if (!call) return false;
    open_call(std::move(call->name), out);
    ReplyDelta arguments = call_delta(calls_ - 1, false);
    arguments.arguments = std::move(call->arguments);
    out.push_back(std::move(arguments));
    return true;
}

ParsedReply parse_tool_calls(std::string_view text, ToolCallFormat format, ToolCallIds ids) {
    // All of it at once as the end: every call is checked whole, as a
    // stream cannot check the calls it sends as they come.
    ToolCallStream stream(format, std::move(ids));
    std::vector<ReplyDelta> deltas = stream.finish(text);
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
