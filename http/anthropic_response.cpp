#include "http/anthropic_response.h"

namespace tf::http {

namespace {

using Json = nlohmann::ordered_json;

// Replies may end inside a multi-byte character (max_tokens cut it);
// replace keeps dump() from throwing on such bytes.
std::string dump(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

// Anthropic's SSE framing: the event's name on its own line, then its data.
std::string event(const char* name, const Json& data) {
    return std::string("event: ") + name + "\ndata: " + dump(data) + "\n\n";
}

const char* stop_reason(const ReplyOutcome& outcome, bool made_tool_calls) {
    switch (outcome.finish) {
        case engine::FinishReason::stop_token: return made_tool_calls ? "tool_use" : "end_turn";
        case engine::FinishReason::stop_string: return "stop_sequence";
        case engine::FinishReason::length:
        case engine::FinishReason::context_full: return "max_tokens";
        default: return "end_turn";
    }
}

Json usage_json(const ReplyOutcome& outcome) {
    return {{"input_tokens", outcome.prompt_tokens - outcome.cached_tokens},
            {"cache_creation_input_tokens", 0},
            {"cache_read_input_tokens", outcome.cached_tokens},
            {"output_tokens", outcome.output_tokens}};
}

// Anthropic's error types by status (its API reference, "Errors").
const char* error_type(const ApiError& error) {
    switch (error.status) {
        case 400: return "invalid_request_error";
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 413: return "request_too_large";
        case 429: return "rate_limit_error";
        case 503:
        case 529: return "overloaded_error";
        default: return error.status >= 500 ? "api_error" : "invalid_request_error";
    }
}

Json error_json(const ApiError& error) {
    return {{"type", "error"}, {"error", {{"type", error_type(error)}, {"message", error.what()}}}};
}

}  // namespace

std::string random_tool_use_id() { return "toolu_" + random_tool_call_id().substr(5); }

MessagesWriter::MessagesWriter(MessagesReplySetup setup)
    : setup_(std::move(setup)), reasoning_(setup_.reasoning, setup_.starts_in_reasoning) {
    if (setup_.tool_format != ToolCallFormat::none) tools_.emplace(setup_.tool_format, setup_.tool_ids);
}

std::vector<std::string> MessagesWriter::open() {
    const Json message = {{"id", setup_.id},
                          {"type", "message"},
                          {"role", "assistant"},
                          {"model", setup_.model},
                          {"content", Json::array()},
                          {"stop_reason", nullptr},
                          {"stop_sequence", nullptr},
                          // The prompt cache's share is known only when the
                          // reply ends: message_delta carries it.
                          {"usage", usage_json({engine::FinishReason::running, {}, setup_.prompt_tokens, 0, 0})}};
    return {event("message_start", {{"type", "message_start"}, {"message", message}})};
}

std::vector<std::string> MessagesWriter::feed(std::string_view text) {
    std::vector<std::string> events;
    take(reasoning_.feed(text), events);
    return events;
}

std::vector<std::string> MessagesWriter::finish(const ReplyOutcome& outcome) {
    std::vector<std::string> events;
    take(reasoning_.finish(), events);
    if (tools_) take_deltas(tools_->finish(), events);
    close_block(events);
    const char* reason = stop_reason(outcome, tool_calls_ > 0);
    const Json stop_sequence = outcome.stop_sequence ? Json(*outcome.stop_sequence) : Json(nullptr);
    const Json usage = usage_json(outcome);
    Json delta = {{"type", "message_delta"},
                  {"delta", {{"stop_reason", reason}, {"stop_sequence", stop_sequence}}},
                  {"usage", usage}};
    if (outcome.token_ids) delta["token_ids"] = *outcome.token_ids;
    events.push_back(event("message_delta", delta));
    events.push_back(event("message_stop", {{"type", "message_stop"}}));
    message_ = {{"id", setup_.id},       {"type", "message"},           {"role", "assistant"},
                {"model", setup_.model}, {"content", blocks_},          {"stop_reason", reason},
                {"stop_sequence", stop_sequence}, {"usage", usage}};
    if (outcome.token_ids) message_["token_ids"] = *outcome.token_ids;
    return events;
}

std::string MessagesWriter::body() const { return dump(message_); }

std::string MessagesWriter::error_body(const ApiError& error) const { return anthropic_error_body(error); }

std::string MessagesWriter::error_event(const ApiError& error) const { return event("error", error_json(error)); }

void MessagesWriter::take(std::vector<ReplyPiece> pieces, std::vector<std::string>& events) {
    for (ReplyPiece& piece : pieces) {
        if (piece.reasoning) {
            add_text(Kind::thinking, piece.text, events);
        } else {
            take_answer(piece.text, events);
        }
    }
}

void MessagesWriter::take_answer(std::string_view text, std::vector<std::string>& events) {
    if (!tools_) return add_text(Kind::text, text, events);
    take_deltas(tools_->feed(text), events);
}

void MessagesWriter::take_deltas(std::vector<ReplyDelta> deltas, std::vector<std::string>& events) {
    for (ReplyDelta& d : deltas) {
        if (!d.is_tool_call) {
            add_text(Kind::text, d.content, events);
            continue;
        }
        if (d.opens) {
            ++tool_calls_;
            start_block(Kind::tool_use, {{"type", "tool_use"}, {"id", d.id}, {"name", d.name}, {"input", Json::object()}},
                        events);
        }
        if (d.arguments.empty()) continue;
        const auto index = static_cast<int64_t>(blocks_.size() - 1);
        tool_inputs_.back() += d.arguments;
        events.push_back(event("content_block_delta", {{"type", "content_block_delta"},
                                                       {"index", index},
                                                       {"delta", {{"type", "input_json_delta"}, {"partial_json", d.arguments}}}}));
    }
}

// Text and thinking go into the open block of their kind, or a new one.
void MessagesWriter::add_text(Kind kind, std::string_view text, std::vector<std::string>& events) {
    if (text.empty()) return;
    const bool thinking = kind == Kind::thinking;
    if (open_kind_ != kind) {
        start_block(kind,
                    thinking ? Json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                             : Json{{"type", "text"}, {"text", ""}},
                    events);
    }
    const char* key = thinking ? "thinking" : "text";
    Json& block = blocks_.back();
    block[key] = block[key].get<std::string>() + std::string(text);
    events.push_back(event("content_block_delta",
                           {{"type", "content_block_delta"},
                            {"index", static_cast<int64_t>(blocks_.size() - 1)},
                            {"delta", {{"type", thinking ? "thinking_delta" : "text_delta"}, {key, std::string(text)}}}}));
}

void MessagesWriter::start_block(Kind kind, Json block, std::vector<std::string>& events) {
    close_block(events);
    events.push_back(event("content_block_start", {{"type", "content_block_start"},
                                                   {"index", static_cast<int64_t>(blocks_.size())},
                                                   {"content_block", block}}));
    blocks_.push_back(std::move(block));
    tool_inputs_.emplace_back();
    open_kind_ = kind;
}

void MessagesWriter::close_block(std::vector<std::string>& events) {
    if (open_kind_ == Kind::none) return;
    if (open_kind_ == Kind::tool_use) {
        // The body carries the input as the object the pieces spell.
        Json input = Json::parse(tool_inputs_.back(), nullptr, false);
        blocks_.back()["input"] = input.is_object() ? std::move(input) : Json::object();
    }
    events.push_back(event("content_block_stop",
                           {{"type", "content_block_stop"}, {"index", static_cast<int64_t>(blocks_.size() - 1)}}));
    open_kind_ = Kind::none;
}

std::string anthropic_error_body(const ApiError& error) { return dump(error_json(error)); }

std::string count_tokens_body(int64_t input_tokens) { return dump(Json{{"input_tokens", input_tokens}}); }

std::optional<std::string> matched_stop_sequence(std::string_view decoded, std::string_view sent,
                                                 const std::vector<std::string>& stops) {
    for (const std::string& stop : stops) {
        if (decoded.size() >= sent.size() && decoded.substr(sent.size()).starts_with(stop)) return stop;
    }
    // A few bytes of slack: the last character before the stop may have
    // been held back by the detokenizer, or decoded apart from the stream.
    constexpr size_t kSlack = 8;
    const size_t from = sent.size() > kSlack ? sent.size() - kSlack : 0;
    std::optional<std::string> best;
    size_t best_at = std::string_view::npos;
    for (const std::string& stop : stops) {
        const size_t found = decoded.find(stop, from);
        if (found != std::string_view::npos && found < best_at) {
            best_at = found;
            best = stop;
        }
    }
    return best;
}

}  // namespace tf::http
