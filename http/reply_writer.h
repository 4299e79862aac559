// ReplyWriter: how a generation route answers in an API other than OpenAI's
// completions and chat completions (Anthropic Messages, OpenAI Responses).
// The route runs the engine exactly as chat completions does; only the
// writing differs. A writer is fed the reply's text as it lands and gives
// that API's SSE events; at the end it gives the whole body, built from the
// same pieces, so a streamed reply and a whole one always agree.
//
// Single-threaded: the Generation that owns it calls it under its mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/request.h"
#include "http/api_error.h"

namespace tf::http {

// How a reply ended, and its token counts.
struct ReplyOutcome {
    engine::FinishReason finish = engine::FinishReason::stop_token;
    std::optional<std::string> stop_sequence;  // finish == stop_string: the one that matched, when known
    int64_t prompt_tokens = 0;
    int64_t cached_tokens = 0;  // of prompt_tokens, those the prompt cache held
    int64_t output_tokens = 0;
    // The request asked for return_token_ids (this server's extension on
    // every route): the reply's ids, for a client that compares replies
    // token by token.
    std::optional<std::vector<int32_t>> token_ids;
};

class ReplyWriter {
public:
    virtual ~ReplyWriter() = default;
    // The stream's opening events (before any text).
    virtual std::vector<std::string> open() = 0;
    // Events for more of the reply's text (none while text is held back).
    virtual std::vector<std::string> feed(std::string_view text) = 0;
    // The stream's closing events; afterwards body() is the whole reply.
    virtual std::vector<std::string> finish(const ReplyOutcome& outcome) = 0;
    virtual std::string body() const = 0;
    // A failure in this API's error shape: a whole body, or an SSE event
    // ending a stream that has begun.
    virtual std::string error_body(const ApiError& error) const = 0;
    virtual std::string error_event(const ApiError& error) const = 0;
};

// Which of `stops` ended a reply: the one the whole decoded reply
// (`decoded`, the stop text included) has where the text sent before it
// (`sent`) ends; failing that, the first that `decoded` holds past `sent`'s
// start minus a few bytes (a detokenizer may have held a character back).
// Absent when none is found.
std::optional<std::string> matched_stop_sequence(std::string_view decoded, std::string_view sent,
                                                 const std::vector<std::string>& stops);

}  // namespace tf::http
