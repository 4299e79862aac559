// Router: the routes of tensorfold serve over a Service (actors/service.h).
//
//   POST   /v1/completions       prompt text, list of texts, or token ids; SSE with stream
//   POST   /v1/chat/completions  messages through the model's chat template
//   POST   /v1/messages          Anthropic's Messages API, on the same path (anthropic_request.h)
//   POST   /v1/messages/count_tokens  the prompt's token count for a Messages body
//   POST   /v1/responses         OpenAI's Responses API, stateless, on the same path (responses_request.h)
//   POST   /tokenize             text to token ids (llama.cpp's shape, tokenize_request.h)
//   POST   /detokenize           token ids to text
//   POST   /apply-template       a chat body's prompt text, as the chat routes render it
//   GET    /v1/models            the one served model
//   GET    /v1/recall            the record's report (recall_json.h)
//   DELETE /v1/recall            empties the record: 200, 409 (read-only, following), 500 (names the file)
//   GET    /health               open
//   GET    /metrics              open; Prometheus text (metrics_page.h)
//
// With an API key every /v1/* route and the tokenizer routes need "Authorization: Bearer KEY"
// (constant-time compare) else 401; the Anthropic routes also take it as
// "x-api-key: KEY", as Anthropic's clients send it. Unknown route 404, known
// route with the wrong method 405 with Allow. Errors are {"error":
// {"message", "type", "code"}}, on the Anthropic routes {"type": "error",
// "error": {"type", "message"}}.
//
// Thread-safety: handle() runs on the server's threads, concurrently; the
// Router is immutable after construction apart from the thread-safe timings.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/service.h"
#include "grammar/grammar_constraint.h"
#include "http/metrics_page.h"
#include "http/openai_request.h"
#include "http/server.h"
#include "http/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace tf::http {

struct RouterOptions {
    std::string served_model_name;        // requests must name it in "model"
    // Further names requests may use for the served model (--model-alias);
    // "*" takes any name, for clients such as Claude Code that name models
    // of their own.
    std::vector<std::string> model_aliases;
    std::string api_key;                  // empty: no authentication
    int32_t ctx_size = 0;                 // the context: prompt + reply tokens
    uint32_t vocab_size = 0;              // token ids at or above it are refused
    std::vector<int32_t> eos_token_ids;   // end every reply (ModelConfig::eos_token_ids)
    int64_t created = 0;                  // Unix seconds the server started (GET /v1/models)
    int retry_after_seconds = 1;          // 503's Retry-After when the service is full
    ServedFacts facts;                    // reported on /metrics
};

// A chat request's prompt: the template's text, its ids, and the form the
// reply's tool calls take (none when they are not looked for).
struct ChatPrompt {
    std::string text;
    std::vector<model::TokenId> ids;
    ToolCallFormat tool_format = ToolCallFormat::none;
};

// The names a route's API gives the conversation and the reply's token
// limit, so errors about them name the fields the client sent.
struct ChatFields {
    std::string conversation = "messages";  // /v1/responses: "input"
    std::string max_tokens = "max_tokens";  // /v1/responses: "max_output_tokens"
};

class Router {
public:
    Router(actors::Service& service, const tokenizer::Tokenizer& tokenizer, RouterOptions options);

    // The Server's Handler.
    void handle(HttpRequest request, std::shared_ptr<Responder> responder);

private:
    using Clock = std::chrono::steady_clock;
    struct Generation;  // one HTTP generation request: its prompts, choices and stream state

    void route(const HttpRequest& request, const std::shared_ptr<Responder>& responder);
    void completions(const HttpRequest& request, const std::shared_ptr<Responder>& responder, Clock::time_point arrival);
    void chat_completions(const HttpRequest& request, const std::shared_ptr<Responder>& responder,
                          Clock::time_point arrival);
    void messages(const HttpRequest& request, const std::shared_ptr<Responder>& responder, Clock::time_point arrival);
    void count_tokens(const HttpRequest& request, const std::shared_ptr<Responder>& responder) const;
    void responses(const HttpRequest& request, const std::shared_ptr<Responder>& responder, Clock::time_point arrival);
    void tokenize(const HttpRequest& request, const std::shared_ptr<Responder>& responder) const;
    void detokenize(const HttpRequest& request, const std::shared_ptr<Responder>& responder) const;
    void apply_template(const HttpRequest& request, const std::shared_ptr<Responder>& responder) const;
    void models(const std::shared_ptr<Responder>& responder) const;
    void metrics(const std::shared_ptr<Responder>& responder);
    void get_recall(const std::shared_ptr<Responder>& responder);
    void delete_recall(const std::shared_ptr<Responder>& responder);

    // Shared by both generation routes: validation, submission, answers.
    void check_model(const std::string& model) const;
    ChatPrompt chat_prompt(const ChatRequest& parsed, const ChatFields& fields = {}) const;
    engine::GenerationRequest chat_generation_request(const ChatPrompt& prompt, const ChatRequest& parsed,
                                                      const ChatFields& fields = {}) const;
    std::vector<model::TokenId> fim_ids(const PromptInput& input, const std::string& suffix, const std::string& field) const;
    std::vector<model::TokenId> check_ids(const std::vector<int32_t>& ids, const std::string& field) const;
    engine::GenerationRequest generation_request(std::vector<model::TokenId> prompt, const SamplingFields& sampling,
                                                 const std::string& field,
                                                 const std::string& max_tokens_field = "max_tokens") const;
    void run(std::shared_ptr<Generation> generation, std::vector<engine::GenerationRequest> requests);
    void use_logprobs(Generation& generation, const SamplingFields& sampling) const;
    // The constraint response_format asks for; null for free text.
    std::shared_ptr<const engine::Constraint> response_constraint(const ResponseFormat& format) const;
    std::shared_ptr<const engine::Constraint> grammar_constraint(std::shared_ptr<const grammar::Grammar> grammar) const;
    std::shared_ptr<const engine::Constraint> forced_tool_call(ToolCallFormat format, const ChatRequest& parsed) const;

    actors::Service& service_;
    tokenizer::Tokenizer tokenizer_;
    RouterOptions options_;
    RequestTimings timings_;
    // The token bytes and masker constrained requests share; built by the
    // first one that needs it, so start-up never pays for it.
    mutable std::once_flag vocabulary_once_;
    mutable std::shared_ptr<const grammar::TokenVocabulary> vocabulary_;
};

}  // namespace tf::http
