// The replies of POST /v1/responses in OpenAI's Responses shapes: the
// response object and its SSE stream. Pure functions and a single-threaded
// writer; nothing here touches the engine.
//
// The output is a list of items in the order the reply has them: a
// "reasoning" item when the model thought (its reasoning_text), a "message"
// item with one output_text part for the answer, and a "function_call" item
// per call. The stream is, each event with the next sequence_number:
//   response.created, response.in_progress (the response, status in_progress)
//   per item: response.output_item.added
//     message:   response.content_part.added, response.output_text.delta...,
//                response.output_text.done, response.content_part.done
//     reasoning: the same with reasoning_text parts and response.reasoning_text.delta/.done
//     function_call: response.function_call_arguments.delta..., .done
//   response.output_item.done
//   response.completed, or response.incomplete when max_output_tokens cut it
// and a failure after the stream began is response.failed, so a stream never
// just ends. The final event's response is what body() gives.
//
// usage follows OpenAI's meaning: input_tokens is the whole prompt, of which
// input_tokens_details.cached_tokens the prompt cache held.
#pragma once

#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "http/reasoning.h"
#include "http/reply_writer.h"
#include "http/tool_calls.h"

namespace tf::http {

struct ResponsesReplySetup {
    std::string id;     // "resp_..."
    std::string model;  // the name the request used (else the served one)
    int64_t created_at = 0;
    std::string echoed_json = "{}";  // the request's settings the response repeats (ResponsesRequest)
    ToolCallFormat tool_format = ToolCallFormat::none;  // none: the reply is not searched for calls
    ReasoningMarkers reasoning;                         // none: no reasoning items
    bool starts_in_reasoning = false;                   // the prompt opened the thought
    // How many tokens a piece of reasoning text is (usage's reasoning_tokens);
    // unset: 0 is reported.
    std::function<int64_t(std::string_view)> count_tokens;
    ToolCallIds call_ids = random_tool_call_id;  // "call_..." for call_id
    std::function<std::string()> item_ids;       // the part of item ids after "msg_", "rs_", "fc_"; unset: random hex
};

class ResponsesWriter : public ReplyWriter {
public:
    explicit ResponsesWriter(ResponsesReplySetup setup);

    std::vector<std::string> open() override;
    std::vector<std::string> feed(std::string_view text) override;
    std::vector<std::string> finish(const ReplyOutcome& outcome) override;
    std::string body() const override;
    std::string error_body(const ApiError& error) const override;
    std::string error_event(const ApiError& error) const override;

private:
    using Json = nlohmann::ordered_json;
    enum class Kind { none, message, reasoning, function_call };

    std::string event(const char* name, Json data) const;
    Json response(const char* status) const;
    void take(std::vector<ReplyPiece> pieces, std::vector<std::string>& events);
    void take_deltas(std::vector<ReplyDelta> deltas, std::vector<std::string>& events);
    void add_text(Kind kind, std::string_view text, std::vector<std::string>& events);
    void start_item(Kind kind, Json item, std::vector<std::string>& events);
    void close_item(std::vector<std::string>& events);

    ResponsesReplySetup setup_;
    Json echoed_;
    ReasoningStream reasoning_;
    std::optional<ToolCallStream> tools_;
    Kind open_kind_ = Kind::none;
    Json output_ = Json::array();  // the items so far; the open one last
    std::string open_text_;        // the open item's text or arguments so far
    std::string reasoning_text_;   // all the reply's reasoning, for usage
    // The next event's sequence_number; error_event (const, as the writer
    // interface has it) sends one too.
    mutable int64_t sequence_ = 0;
    Json final_;                   // after finish(): the whole response
};

}  // namespace tf::http
