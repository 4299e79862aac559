#include "http/responses_response.h"

#include <algorithm>

namespace tf::http {

namespace {

using Json = nlohmann::ordered_json;

// Replies may end inside a multi-byte character (max_output_tokens cut it);
// replace keeps dump() from throwing on such bytes.
std::string dump(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json output_text_part(std::string text) {
    return {{"type", "output_text"}, {"text", std::move(text)}, {"annotations", Json::array()}, {"logprobs", Json::array()}};
}

Json reasoning_text_part(std::string text) { return {{"type", "reasoning_text"}, {"text", std::move(text)}}; }

// OpenAI's error codes for a response that failed. A stream fails only
// once it has begun, when the server stops the request (a 503), which is
// the server's doing, not a rate limit.
const char* failure_code(const ApiError& error) {
    if (error.status == 429) return "rate_limit_exceeded";
    return error.status >= 500 ? "server_error" : "invalid_prompt";
}

}  // namespace

ResponsesWriter::ResponsesWriter(ResponsesReplySetup setup)
    : setup_(std::move(setup)),
      echoed_(Json::parse(setup_.echoed_json)),
      reasoning_(setup_.reasoning, setup_.starts_in_reasoning) {
    if (setup_.tool_format != ToolCallFormat::none) tools_.emplace(setup_.tool_format, setup_.call_ids);
    if (!setup_.item_ids) setup_.item_ids = [] { return random_tool_call_id().substr(5); };
}

// The SSE framing OpenAI uses: the event's name, then its data, whose
// "type" repeats the name and which carries the stream's running count.
std::string ResponsesWriter::event(const char* name, Json data) const {
    Json framed = {{"type", name}, {"sequence_number", sequence_++}};
    framed.update(data);
    return std::string("event: ") + name + "\ndata: " + dump(framed) + "\n\n";
}

// The response object: its own fields, then the request's settings.
Json ResponsesWriter::response(const char* status) const {
    Json r = {{"id", setup_.id},
              {"object", "response"},
              {"created_at", setup_.created_at},
              {"status", status},
              {"background", false},
              {"error", nullptr},
              {"incomplete_details", nullptr},
              {"model", setup_.model},
              {"output", Json::array()},
              {"usage", nullptr}};
    for (const auto& [key, value] : echoed_.items()) r[key] = value;
    return r;
}

std::vector<std::string> ResponsesWriter::open() {
    std::vector<std::string> events;
    events.push_back(event("response.created", {{"response", response("in_progress")}}));
    events.push_back(event("response.in_progress", {{"response", response("in_progress")}}));
    return events;
}

std::vector<std::string> ResponsesWriter::feed(std::string_view text) {
    std::vector<std::string> events;
    take(reasoning_.feed(text), events);
    return events;
}

std::vector<std::string> ResponsesWriter::finish(const ReplyOutcome& outcome) {
    std::vector<std::string> events;
    take(reasoning_.finish(), events);
    if (tools_) take_deltas(tools_->finish(), events);
    close_item(events);
    // A reply cut by max_output_tokens (or by the context's end) is
    // incomplete, whatever it holds.
    const bool cut = outcome.finish == engine::FinishReason::length || outcome.finish == engine::FinishReason::context_full;
    final_ = response(cut ? "incomplete" : "completed");
    if (cut) final_["incomplete_details"] = {{"reason", "max_output_tokens"}};
    final_["output"] = output_;
    const int64_t reasoning_tokens =
        setup_.count_tokens && !reasoning_text_.empty() ? std::min(setup_.count_tokens(reasoning_text_), outcome.output_tokens) : 0;
    final_["usage"] = {{"input_tokens", outcome.prompt_tokens},
                       {"input_tokens_details", {{"cached_tokens", outcome.cached_tokens}}},
                       {"output_tokens", outcome.output_tokens},
                       {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens}}},
                       {"total_tokens", outcome.prompt_tokens + outcome.output_tokens}};
    if (outcome.token_ids) final_["token_ids"] = *outcome.token_ids;
    events.push_back(event(cut ? "response.incomplete" : "response.completed", {{"response", final_}}));
    return events;
}

std::string ResponsesWriter::body() const { return dump(final_); }

// Before the stream begins, errors are OpenAI's usual error body.
std::string ResponsesWriter::error_body(const ApiError& error) const { return error.body(); }

// Once it has begun, the stream ends with the response failed: clients such
// as Codex treat a stream without a final response event as broken.
std::string ResponsesWriter::error_event(const ApiError& error) const {
    Json failed = response("failed");
    failed["output"] = output_;
    failed["error"] = {{"code", failure_code(error)}, {"message", error.what()}};
    return event("response.failed", {{"response", failed}});
}

void ResponsesWriter::take(std::vector<ReplyPiece> pieces, std::vector<std::string>& events) {
    for (ReplyPiece& piece : pieces) {
        if (piece.reasoning) {
            reasoning_text_ += piece.text;
            add_text(Kind::reasoning, piece.text, events);
        } else if (tools_) {
            take_deltas(tools_->feed(piece.text), events);
        } else {
            add_text(Kind::message, piece.text, events);
        }
    }
}

void ResponsesWriter::take_deltas(std::vector<ReplyDelta> deltas, std::vector<std::string>& events) {
    for (ReplyDelta& d : deltas) {
        if (!d.is_tool_call) {
            add_text(Kind::message, d.content, events);
            continue;
        }
        if (d.opens) {
            start_item(Kind::function_call,
                       {{"id", "fc_" + setup_.item_ids()},
                        {"type", "function_call"},
                        {"status", "in_progress"},
                        {"arguments", ""},
                        {"call_id", d.id},
                        {"name", d.name}},
                       events);
        }
        if (d.arguments.empty()) continue;
        open_text_ += d.arguments;
        events.push_back(event("response.function_call_arguments.delta",
                               {{"item_id", output_.back()["id"]},
                                {"output_index", output_.size() - 1},
                                {"delta", d.arguments}}));
    }
}

// Text goes into the open item of its kind, or a new one.
void ResponsesWriter::add_text(Kind kind, std::string_view text, std::vector<std::string>& events) {
    if (text.empty()) return;
    const bool reasoning = kind == Kind::reasoning;
    if (open_kind_ != kind) {
        if (reasoning) {
            start_item(kind, {{"id", "rs_" + setup_.item_ids()}, {"type", "reasoning"}, {"summary", Json::array()},
                              {"content", Json::array()}}, events);
        } else {
            start_item(kind, {{"id", "msg_" + setup_.item_ids()}, {"type", "message"}, {"status", "in_progress"},
                              {"content", Json::array()}, {"role", "assistant"}}, events);
        }
        events.push_back(event("response.content_part.added",
                               {{"item_id", output_.back()["id"]},
                                {"output_index", output_.size() - 1},
                                {"content_index", 0},
                                {"part", reasoning ? reasoning_text_part("") : output_text_part("")}}));
    }
    open_text_ += text;
    Json delta = {{"item_id", output_.back()["id"]},
                  {"output_index", output_.size() - 1},
                  {"content_index", 0},
                  {"delta", std::string(text)}};
    if (!reasoning) delta["logprobs"] = Json::array();
    events.push_back(event(reasoning ? "response.reasoning_text.delta" : "response.output_text.delta", std::move(delta)));
}

void ResponsesWriter::start_item(Kind kind, Json item, std::vector<std::string>& events) {
    close_item(events);
    output_.push_back(std::move(item));
    open_kind_ = kind;
    open_text_.clear();
    events.push_back(event("response.output_item.added", {{"output_index", output_.size() - 1}, {"item", output_.back()}}));
}

void ResponsesWriter::close_item(std::vector<std::string>& events) {
    if (open_kind_ == Kind::none) return;
    Json& item = output_.back();
    const Json item_id = item["id"];
    const size_t index = output_.size() - 1;
    if (open_kind_ == Kind::function_call) {
        item["arguments"] = open_text_;
        item["status"] = "completed";
        events.push_back(event("response.function_call_arguments.done",
                               {{"item_id", item_id}, {"output_index", index}, {"name", item["name"]}, {"arguments", open_text_}}));
    } else {
        const bool reasoning = open_kind_ == Kind::reasoning;
        const Json part = reasoning ? reasoning_text_part(open_text_) : output_text_part(open_text_);
        events.push_back(event(reasoning ? "response.reasoning_text.done" : "response.output_text.done",
                               {{"item_id", item_id}, {"output_index", index}, {"content_index", 0}, {"text", open_text_}}));
        events.push_back(event("response.content_part.done",
                               {{"item_id", item_id}, {"output_index", index}, {"content_index", 0}, {"part", part}}));
        item["content"] = Json::array({part});
        if (!reasoning) item["status"] = "completed";
    }
    events.push_back(event("response.output_item.done", {{"output_index", index}, {"item", item}}));
    open_kind_ = Kind::none;
    open_text_.clear();
}

}  // namespace tf::http
