// The replies of POST /v1/messages in Anthropic's shapes: the message body,
// its SSE stream, count_tokens and errors. Pure functions and a
// single-threaded writer; nothing here touches the engine.
//
// The stream is, in order: message_start (content [], usage with the
// prompt's tokens), then for each content block content_block_start,
// content_block_delta (text_delta, thinking_delta or input_json_delta,
// whose partial_json pieces join into the tool's input), content_block_stop,
// with indices 0, 1, ... in the order the blocks appear; then message_delta
// (stop_reason, stop_sequence, the final usage) and message_stop.
//
// usage follows Anthropic's meaning: input_tokens are the prompt tokens read
// afresh, cache_read_input_tokens those the prompt cache already held (their
// sum is the whole prompt, what count_tokens answers), and
// cache_creation_input_tokens is 0 (caching costs nothing here).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "http/reasoning.h"
#include "http/reply_writer.h"
#include "http/tool_calls.h"

namespace tf::http {

// "toolu_" and 24 random hex digits, as Anthropic names tool calls. Thread-safe.
std::string random_tool_use_id();

struct MessagesReplySetup {
    std::string id;     // "msg_..."
    std::string model;  // the name the request used (else the served one)
    ToolCallFormat tool_format = ToolCallFormat::none;  // none: the reply is not searched for calls
    ReasoningMarkers reasoning;                         // none: no thinking blocks
    bool starts_in_reasoning = false;                   // the prompt opened the thought
    int64_t prompt_tokens = 0;                          // for message_start
    ToolCallIds tool_ids = random_tool_use_id;
};

class MessagesWriter : public ReplyWriter {
public:
    explicit MessagesWriter(MessagesReplySetup setup);

    std::vector<std::string> open() override;
    std::vector<std::string> feed(std::string_view text) override;
    std::vector<std::string> finish(const ReplyOutcome& outcome) override;
    std::string body() const override;
    std::string error_body(const ApiError& error) const override;
    std::string error_event(const ApiError& error) const override;

private:
    using Json = nlohmann::ordered_json;
    enum class Kind { none, text, thinking, tool_use };

    void take(std::vector<ReplyPiece> pieces, std::vector<std::string>& events);
    void take_answer(std::string_view text, std::vector<std::string>& events);
    void take_deltas(std::vector<ReplyDelta> deltas, std::vector<std::string>& events);
    void add_text(Kind kind, std::string_view text, std::vector<std::string>& events);
    void start_block(Kind kind, Json block, std::vector<std::string>& events);
    void close_block(std::vector<std::string>& events);

    MessagesReplySetup setup_;
    ReasoningStream reasoning_;
    std::optional<ToolCallStream> tools_;
    Kind open_kind_ = Kind::none;
    Json blocks_ = Json::array();          // the content so far, as the body writes it
    std::vector<std::string> tool_inputs_;  // per block: a tool_use's input JSON text as streamed
    int32_t tool_calls_ = 0;
    Json message_;                          // after finish(): the whole message
};

// Anthropic's error shape: {"type": "error", "error": {"type", "message"}}.
std::string anthropic_error_body(const ApiError& error);
// POST /v1/messages/count_tokens.
std::string count_tokens_body(int64_t input_tokens);

}  // namespace tf::http
