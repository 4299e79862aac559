// The OpenAI request parser takes any body a client sends (http/openai_request.h).
// Its contract is that a body is either parsed or refused with an ApiError(400)
// naming the field; anything else reaching the router would become a 500, and
// a crash would take every other request down with it.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "http/api_error.h"
#include "http/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    // Both routes see every body: their field sets overlap, so one corpus
    // feeds both parsers.
    try {
        const tf::http::CompletionRequest request = tf::http::parse_completion_request(body);
        if (request.prompts.empty()) std::abort();  // a parsed completion always has a prompt
    } catch (const tf::http::ApiError& error) {
        if (error.status != 400) std::abort();
    }
    try {
        const tf::http::ChatRequest request = tf::http::parse_chat_request(body);
        if (request.messages.empty()) std::abort();
    } catch (const tf::http::ApiError& error) {
        if (error.status != 400) std::abort();
    }
    return 0;
}
