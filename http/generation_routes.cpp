// POST /v1/completions and /v1/chat/completions: validate, tokenize, submit
// one engine request per prompt, and answer with one JSON body at the end or
// with SSE chunks as the rounds land. A chat request with tools has each
// choice's reply split into content and tool calls (tool_calls.h).
#include <algorithm>
#include <ctime>
#include <mutex>
#include <random>

#include "http/api_error.h"
#include "http/openai_response.h"
#include "http/router.h"
#include "http/tool_calls.h"

namespace tf::http {

namespace {

constexpr const char* kJson = "application/json";

std::string random_hex(size_t digits) {
    thread_local std::mt19937_64 generator{std::random_device{}()};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (size_t i = 0; i < digits; ++i) out += kHex[generator() & 15];
    return out;
}

// Requests without a seed get a random one, so two of them differ.
uint64_t random_seed() {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
}

// "tool_calls" when the reply made calls and ended by itself; a reply cut
// by max_tokens stays "length" whatever it holds.
const char* finish_reason(engine::FinishReason reason, bool made_tool_calls = false) {
    switch (reason) {
        case engine::FinishReason::stop_token:
        case engine::FinishReason::stop_string: return made_tool_calls ? "tool_calls" : "stop";
        case engine::FinishReason::length:
        case engine::FinishReason::context_full: return "length";
        default: return nullptr;
    }
}

}  // namespace

// One HTTP generation request: a choice per prompt. Event callbacks of its
// engine requests run on actor threads, concurrently across choices; every
// member is guarded by `mutex`. Output is produced by pump(), which sends
// whatever is pending in order, so chunks of one choice never overtake each
// other and [DONE] comes last.
struct Router::Generation {
    struct Part {
        std::string prefix;  // echo: the prompt's text, before the reply
        std::string text;    // reply text (non-streaming) or text not yet sent (streaming)
        // return_token_ids only: the reply's ids (non-streaming) or ids not yet
        // sent (streaming), and the prompt's ids.
        std::vector<int32_t> ids;
        std::vector<int32_t> prompt_ids;
        int64_t prompt_tokens = 0;
        int64_t cached_tokens = 0;  // of prompt_tokens, what the prompt cache held (the last event says)
        int64_t completion_tokens = 0;
        engine::FinishReason finish = engine::FinishReason::running;
        bool first_token_seen = false;
        Clock::time_point last_token_at;  // the latest event that brought tokens
        bool finish_sent = false;
        bool opened = false;  // streaming: role chunk (chat) or echo chunk (completions) sent
        // Streaming chat with tools: takes the calls out of the text as it
        // comes (each choice parses its own reply).
        std::optional<ToolCallStream> tool_stream;
        std::optional<actors::RequestHandle> handle;
        // logprobs only: the reply's entries (non-streaming) or those not yet
        // sent (streaming), and where the first of them starts in the text.
        std::vector<LogprobEntry> logprobs;
        int64_t logprob_offset = 0;
    };

    bool chat = false;
    bool stream = false;
    bool include_usage = false;
    bool token_ids = false;  // the request asked for "return_token_ids"
    bool logprobs = false;   // the request asked for logprobs
    const tokenizer::Tokenizer* tokenizer = nullptr;  // writes out the logprobs' tokens
    std::vector<model::TokenId> end_tokens;           // have no text: no logprobs entry
    // Chat: the form tool calls are parsed out of replies in; none when the
    // request offers no tools or says tool_choice "none".
    ToolCallFormat tool_format = ToolCallFormat::none;
    ResponseHeader header;
    std::shared_ptr<Responder> responder;
    Clock::time_point arrival;
    RequestTimings* timings = nullptr;

    std::mutex mutex;
    std::vector<Part> parts;

    // The n choices of one prompt: the same part and request n times, choice
    // j sampling with seed + j (wrapping), so choice 0 is what n = 1 would
    // answer. Choice indexes run prompt by prompt. Each choice is a stream of
    // its own; they find the prompt's KV in the prompt cache like any requests
    // with one prompt.
    void add_choices(std::vector<engine::GenerationRequest>& requests, const Part& part,
                     const engine::GenerationRequest& request, int32_t n) {
        for (int32_t j = 0; j < n; ++j) {
            parts.push_back(part);
            if (stream && tool_format != ToolCallFormat::none) parts.back().tool_stream.emplace(tool_format);
            requests.push_back(request);
            requests.back().sampling.seed = request.sampling.seed + static_cast<uint64_t>(j);
        }
    }
    bool started = false;  // every request submitted; answers may go out
    bool aborted = false;  // a submission failed; the error was answered
    bool gone = false;     // the client went away
    bool answered = false;

    void on_event(size_t index, actors::StreamEvent event) {
        std::lock_guard lock(mutex);
        if (aborted || answered) return;
        Part& part = parts[index];
        if (!event.tokens.empty()) {
            const Clock::time_point now = Clock::now();
            if (!part.first_token_seen) {
                part.first_token_seen = true;
                timings->observe_first_token(now - arrival);
            } else {
                timings->observe_token_gap(now - part.last_token_at, event.tokens.size());
            }
            part.last_token_at = now;
        }
        part.completion_tokens += static_cast<int64_t>(event.tokens.size());
        part.text += event.text;
        if (token_ids) part.ids.insert(part.ids.end(), event.tokens.begin(), event.tokens.end());
        if (logprobs) add_logprobs(part, event);
        if (event.finish != engine::FinishReason::running) {
            part.finish = event.finish;
            part.cached_tokens = event.resume_point;
            timings->observe_finished(Clock::now() - arrival);
        }
        pump();
    }

    void add_logprobs(Part& part, const actors::StreamEvent& event) const {
        // The token's own bytes: a piece of a character stays as it is here
        // (chat's "bytes" carry it whole; the JSON text shows U+FFFD).
        auto text_of = [&](model::TokenId id) -> std::string {
            try {
                return tokenizer->token_to_piece(static_cast<tokenizer::TokenId>(id));
            } catch (const tokenizer::TokenizerError&) {
                return {};  // an id past the tokenizer's vocabulary (a padded embedding row)
            }
        };
        for (size_t k = 0; k < event.tokens.size() && k < event.logprobs.size(); ++k) {
            if (std::find(end_tokens.begin(), end_tokens.end(), event.tokens[k]) != end_tokens.end()) continue;
            const engine::TokenLogprob& source = event.logprobs[k];
            LogprobEntry entry{text_of(event.tokens[k]), source.logprob, {}};
            for (const auto& [id, logprob] : source.top) entry.top.emplace_back(text_of(id), logprob);
            part.logprobs.push_back(std::move(entry));
        }
    }

    // Sends what is pending; answers when every choice has finished. Called
    // with `mutex` held.
    void pump() {
        if (!started || answered || aborted) return;
        bool all_finished = true;
        bool any_cancelled = false;
        for (const Part& p : parts) {
            all_finished = all_finished && p.finish != engine::FinishReason::running;
            any_cancelled = any_cancelled || p.finish == engine::FinishReason::cancelled;
        }
        if (any_cancelled && all_finished) {
            answered = true;
            // The client went away (nothing to send), or the server is stopping.
            if (gone || responder->disconnected()) return;
            if (stream) return responder->end_events();
            ApiError error(503, "the server stopped this request before it finished (shutting down)");
            error.headers.emplace_back("Retry-After", "1");
            return responder->respond(503, kJson, error.body(), error.headers);
        }
        if (stream) send_chunks();
        if (!all_finished) return;
        answered = true;
        Usage usage;
        std::vector<Choice> choices;
        for (size_t i = 0; i < parts.size(); ++i) {
            usage.prompt_tokens += parts[i].prompt_tokens;
            usage.cached_tokens += parts[i].cached_tokens;
            usage.completion_tokens += parts[i].completion_tokens;
            Choice choice{static_cast<int32_t>(i), parts[i].prefix + parts[i].text, finish_reason(parts[i].finish)};
            if (!stream && tool_format != ToolCallFormat::none) {
                ParsedReply reply = parse_tool_calls(choice.text, tool_format);
                choice.text = std::move(reply.content);
                choice.tool_calls = std::move(reply.tool_calls);
                choice.finish_reason = finish_reason(parts[i].finish, !choice.tool_calls.empty());
            }
            choices.push_back(std::move(choice));
            if (token_ids) {
                choices.back().token_ids = std::move(parts[i].ids);
                choices.back().prompt_token_ids = std::move(parts[i].prompt_ids);
            }
            if (logprobs) {
                choices.back().logprobs = std::move(parts[i].logprobs);
                choices.back().text_offset = static_cast<int64_t>(parts[i].prefix.size());
            }
        }
        if (stream) {
            if (include_usage) responder->send_event(sse_event(usage_chunk(header, chat, usage)));
            responder->send_event(kSseDone);
            return responder->end_events();
        }
        responder->respond(200, kJson, chat ? chat_body(header, choices, usage) : completion_body(header, choices, usage));
    }

    // A streamed choice; with return_token_ids it carries the ids pending
    // for it (none on the opening and finishing chunks).
    Choice chunk_choice(int32_t index, std::string text, std::optional<std::string> finish,
                        std::vector<int32_t> ids = {}) const {
        Choice choice{index, std::move(text), std::move(finish)};
        if (token_ids) choice.token_ids = std::move(ids);
        return choice;
    }

    // The part's pending logprobs go into `choice` (a chunk with content).
    void take_logprobs(Part& p, Choice& choice) const {
        if (!logprobs) return;
        choice.text_offset = p.logprob_offset;
        for (const LogprobEntry& e : p.logprobs) p.logprob_offset += static_cast<int64_t>(e.token.size());
        choice.logprobs = std::move(p.logprobs);
        p.logprobs.clear();
    }

    void send_chunks() {
        for (size_t i = 0; i < parts.size(); ++i) {
            Part& p = parts[i];
            const auto index = static_cast<int32_t>(i);
            if (!p.opened) {
                p.opened = true;
                // The first chat chunk carries the role (and is sent even empty).
                if (chat) {
                    responder->send_event(sse_event(chat_chunk(header, chunk_choice(index, "", std::nullopt), true, include_usage)));
                } else if (!p.prefix.empty()) {
                    responder->send_event(
                        sse_event(completion_chunk(header, chunk_choice(index, p.prefix, std::nullopt), include_usage)));
                }
                p.logprob_offset = static_cast<int64_t>(p.prefix.size());
            }
            if (p.tool_stream) {
                send_tool_stream_chunks(p, index);
                continue;
            }
            // Ids whose text the detokenizer still holds back (a character
            // cut in the middle) go out at once when they were asked for.
            if (!p.text.empty() || !p.ids.empty() || !p.logprobs.empty()) {
                Choice choice = chunk_choice(index, std::move(p.text), std::nullopt, std::move(p.ids));
                take_logprobs(p, choice);
                p.text.clear();
                p.ids.clear();
                responder->send_event(sse_event(chat ? chat_chunk(header, choice, false, include_usage)
                                                     : completion_chunk(header, choice, include_usage)));
            }
            if (p.finish != engine::FinishReason::running && !p.finish_sent) {
                p.finish_sent = true;
                const Choice choice = chunk_choice(index, "", finish_reason(p.finish));
                responder->send_event(sse_event(chat ? chat_chunk(header, choice, false, include_usage)
                                                     : completion_chunk(header, choice, include_usage)));
            }
        }
    }

    // A chat choice whose text goes through its ToolCallStream: content
    // and tool-call pieces in the order the reply has them; text the stream
    // holds back (maybe the start of a call) waits, its ids do not.
    void send_tool_stream_chunks(Part& p, int32_t index) {
        std::vector<ReplyDelta> deltas = p.tool_stream->feed(p.text);
        p.text.clear();
        const bool finishing = p.finish != engine::FinishReason::running && !p.finish_sent;
        if (finishing) {
            for (ReplyDelta& d : p.tool_stream->finish()) deltas.push_back(std::move(d));
        }
        for (const ReplyDelta& d : deltas) {
            if (d.is_tool_call) {
                responder->send_event(sse_event(chat_tool_call_chunk(header, index, d, include_usage)));
                continue;
            }
            Choice choice = chunk_choice(index, d.content, std::nullopt, std::move(p.ids));
            if (!p.logprobs.empty()) take_logprobs(p, choice);
            p.ids.clear();
            responder->send_event(sse_event(chat_chunk(header, choice, false, include_usage)));
        }
        if (!p.ids.empty() || !p.logprobs.empty()) {
            Choice choice = chunk_choice(index, "", std::nullopt, std::move(p.ids));
            take_logprobs(p, choice);
            p.ids.clear();
            responder->send_event(sse_event(chat_chunk(header, choice, false, include_usage)));
        }
        if (finishing) {
            p.finish_sent = true;
            const Choice choice = chunk_choice(index, "", finish_reason(p.finish, p.tool_stream->calls() > 0));
            responder->send_event(sse_event(chat_chunk(header, choice, false, include_usage)));
        }
    }
};

// Forced tool calls (tool_choice "required" or a named function): the reply
// is constrained to one call in the template's own format, so the model
// cannot answer anything else; it is then parsed like any reply with tools.
// forced_tool_call() (tool_calls.h) builds the call's schema and the text
// around it.
std::shared_ptr<const engine::Constraint> Router::forced_tool_call(ToolCallFormat format, const ChatRequest& parsed) const {
    if (format == ToolCallFormat::none) {
        throw bad_request("tool_choice", "tool_choice: the model's chat template shows no tool-call format tensorfold "
                                         "can force (<tool_call> tags or Llama 3 JSON calls)");
    }
    if (parsed.sampling.response_format.type != ResponseFormat::Type::text) {
        throw bad_request("tool_choice", "tool_choice: a forced call and response_format cannot both shape the reply");
    }
    std::vector<ToolSchema> schemas;
    for (const ToolDefinition& tool : parsed.tools) schemas.push_back({tool.name, tool.parameters_json});
    const bool named = parsed.tool_choice.mode == ToolChoice::Mode::function;
    const ForcedToolCall forced = http::forced_tool_call(format, schemas, named ? &parsed.tool_choice.function : nullptr);
    try {
        return grammar_constraint(grammar::Grammar::from_schema(forced.schema_json, forced.prefix, forced.suffix, "tools"));
    } catch (const grammar::GrammarError& e) {
        throw bad_request("tools", e.what());
    }
}

// No model named: the one served (what llama-server and vLLM do). Another
// name is a 404 with OpenAI's "model_not_found" code, so clients that switch
// models on that code keep working.
void Router::check_model(const std::string& model) const {
    if (!model.empty() && model != options_.served_model_name) {
        ApiError error(404, "model: '" + model + "' is not served here; this server serves '" +
                                options_.served_model_name + "' (GET /v1/models)",
                       "model");
        error.code = "model_not_found";
        throw error;
    }
}

std::vector<model::TokenId> Router::check_ids(const std::vector<int32_t>& ids, const std::string& field) const {
    for (int32_t id : ids) {
        if (id < 0 || static_cast<uint32_t>(id) >= options_.vocab_size) {
            throw bad_request("prompt", field + ": token id " + std::to_string(id) + " is outside the vocabulary (ids 0 to " +
                                            std::to_string(options_.vocab_size - 1) + ")");
        }
    }
    return {ids.begin(), ids.end()};
}

engine::GenerationRequest Router::generation_request(std::vector<model::TokenId> prompt, const SamplingFields& sampling,
                                                     const std::string& field) const {
    const auto length = static_cast<int32_t>(prompt.size());
    if (length >= options_.ctx_size) {
        throw bad_request(field, field + ": " + std::to_string(length) + " tokens leave no room for a reply in the context of " +
                                     std::to_string(options_.ctx_size) + " tokens");
    }
    const int32_t room = options_.ctx_size - length;
    if (sampling.max_tokens && *sampling.max_tokens > room) {
        throw bad_request("max_tokens", "max_tokens: " + std::to_string(*sampling.max_tokens) + " and the prompt's " +
                                            std::to_string(length) + " tokens exceed the context of " +
                                            std::to_string(options_.ctx_size) + " tokens (at most " +
                                            std::to_string(room) + " here)");
    }
    engine::GenerationRequest request;
    request.prompt = std::move(prompt);
    request.sampling.temperature = sampling.temperature;
    request.sampling.top_k = sampling.top_k;
    request.sampling.top_p = sampling.top_p;
    request.sampling.min_p = sampling.min_p;
    request.sampling.seed = sampling.seed ? *sampling.seed : random_seed();
    request.max_tokens = sampling.max_tokens.value_or(room);  // absent: up to the end of the context
    request.stop_tokens.assign(options_.eos_token_ids.begin(), options_.eos_token_ids.end());
    request.stop_strings = sampling.stop;
    request.logprobs = sampling.logprobs;
    request.constraint = response_constraint(sampling.response_format);
    return request;
}

std::shared_ptr<const engine::Constraint> Router::grammar_constraint(std::shared_ptr<const grammar::Grammar> grammar) const {
    std::call_once(vocabulary_once_, [this] {
        std::vector<int32_t> ends(options_.eos_token_ids.begin(), options_.eos_token_ids.end());
        vocabulary_ = std::make_shared<const grammar::TokenVocabulary>(grammar::TokenMasker::bytes_of(tokenizer_),
                                                                      std::move(ends));
    });
    return std::make_shared<const grammar::GrammarConstraint>(std::move(grammar), vocabulary_);
}

// json_object and json_schema are enforced while sampling (docs/structured-output.md).
std::shared_ptr<const engine::Constraint> Router::response_constraint(const ResponseFormat& format) const {
    switch (format.type) {
        case ResponseFormat::Type::text: return nullptr;
        case ResponseFormat::Type::json_object: return grammar_constraint(grammar::Grammar::any_json_object());
        case ResponseFormat::Type::json_schema: break;
    }
    try {
        return grammar_constraint(grammar::Grammar::from_schema(format.schema_json));
    } catch (const grammar::GrammarError& e) {
        throw bad_request("response_format", e.what());
    }
}

void Router::use_logprobs(Generation& generation, const SamplingFields& sampling) const {
    generation.logprobs = sampling.logprobs >= 0;
    generation.tokenizer = &tokenizer_;
    generation.end_tokens.assign(options_.eos_token_ids.begin(), options_.eos_token_ids.end());
}

void Router::completions(const HttpRequest& http, const std::shared_ptr<Responder>& responder, Clock::time_point arrival) {
    const CompletionRequest parsed = parse_completion_request(http.body);
    check_model(parsed.model);
    auto generation = std::make_shared<Generation>();
    std::vector<engine::GenerationRequest> requests;
    for (size_t i = 0; i < parsed.prompts.size(); ++i) {
        const PromptInput& input = parsed.prompts[i];
        const std::string field = parsed.prompts.size() == 1 ? "prompt" : "prompt[" + std::to_string(i) + "]";
        std::vector<model::TokenId> ids;
        Generation::Part part;
        if (input.text) {
            std::vector<tokenizer::TokenId> encoded;
            try {
                encoded = tokenizer_.encode(*input.text, /*allow_special=*/true, /*add_special_tokens=*/true);
            } catch (const tokenizer::TokenizerError& e) {
                throw bad_request("prompt", field + ": " + e.what());
            }
            if (encoded.empty()) throw bad_request("prompt", field + ": encodes to no tokens");
            ids.assign(encoded.begin(), encoded.end());
            if (parsed.echo) part.prefix = *input.text;
        } else {
            ids = check_ids(input.ids, field);
            if (parsed.echo) {
                const std::vector<tokenizer::TokenId> as_tokenizer(ids.begin(), ids.end());
                part.prefix = tokenizer_.decode(as_tokenizer);
            }
        }
        part.prompt_tokens = static_cast<int64_t>(ids.size());
        if (parsed.sampling.return_token_ids) part.prompt_ids.assign(ids.begin(), ids.end());
        generation->add_choices(requests, part, generation_request(std::move(ids), parsed.sampling, field),
                                parsed.sampling.n);
    }
    generation->chat = false;
    generation->token_ids = parsed.sampling.return_token_ids;
    use_logprobs(*generation, parsed.sampling);
    generation->stream = parsed.sampling.stream;
    generation->include_usage = parsed.sampling.stream && parsed.sampling.include_usage;
    generation->header = {"cmpl-" + random_hex(24), static_cast<int64_t>(std::time(nullptr)), options_.served_model_name};
    generation->responder = responder;
    generation->arrival = arrival;
    generation->timings = &timings_;
    run(std::move(generation), std::move(requests));
}

void Router::chat_completions(const HttpRequest& http, const std::shared_ptr<Responder>& responder,
                              Clock::time_point arrival) {
    const ChatRequest parsed = parse_chat_request(http.body);
    check_model(parsed.model);
    if (!tokenizer_.has_chat_template()) {
        throw bad_request("messages", "messages: this model has no chat template (tokenizer_config.json chat_template or "
                                      "chat_template.jinja); use /v1/completions");
    }
    // A template that never reads `tools` would drop them without a word:
    // the model would answer as if none were offered.
    if (!parsed.tools.empty() && !tokenizer_.supports_tools()) {
        throw bad_request("tools", "tools: the model's chat template does not accept tools");
    }
    // tool_choice "none": the model sees the tools but is not to call them,
    // so its reply is all content (OpenAI's meaning).
    const ToolCallFormat tool_format = parsed.tool_choice.mode == ToolChoice::Mode::none
                                           ? ToolCallFormat::none
                                           : tool_call_format(tokenizer_.tools_template_source());
    tokenizer::ChatRequest conversation;
    conversation.add_generation_prompt = parsed.add_generation_prompt;
    for (const ChatMessage& m : parsed.messages) {
        tokenizer::ChatMessage message;
        message.role = m.role;
        message.content = m.content;
        message.tool_calls = m.tool_calls;
        message.tool_call_id = m.tool_call_id;
        message.name = m.name;
        conversation.messages.push_back(std::move(message));
    }
    for (const ToolDefinition& tool : parsed.tools) conversation.tools_json.push_back(tool.entry_json);
    std::vector<tokenizer::TokenId> encoded;
    try {
        // The template writes the special tokens itself (BOS included), so
        // nothing is added and special tokens' text is read as tokens.
        encoded = tokenizer_.encode(tokenizer_.render_chat(conversation), /*allow_special=*/true,
                                    /*add_special_tokens=*/false);
    } catch (const tokenizer::TokenizerError& e) {
        throw bad_request("messages", std::string("messages: ") + e.what());
    }
    auto generation = std::make_shared<Generation>();
    Generation::Part part;
    part.prompt_tokens = static_cast<int64_t>(encoded.size());
    if (parsed.sampling.return_token_ids) part.prompt_ids.assign(encoded.begin(), encoded.end());
    std::vector<engine::GenerationRequest> requests;
    engine::GenerationRequest request = generation_request({encoded.begin(), encoded.end()}, parsed.sampling, "messages");
    if (parsed.tool_choice.mode == ToolChoice::Mode::required || parsed.tool_choice.mode == ToolChoice::Mode::function) {
        request.constraint = forced_tool_call(tool_format, parsed);
    }
    generation->chat = true;
    generation->tool_format = tool_format;
    use_logprobs(*generation, parsed.sampling);
    generation->stream = parsed.sampling.stream;
    generation->add_choices(requests, part, request, parsed.sampling.n);
    generation->token_ids = parsed.sampling.return_token_ids;
    generation->include_usage = parsed.sampling.stream && parsed.sampling.include_usage;
    generation->header = {"chatcmpl-" + random_hex(24), static_cast<int64_t>(std::time(nullptr)),
                          options_.served_model_name};
    generation->responder = responder;
    generation->arrival = arrival;
    generation->timings = &timings_;
    run(std::move(generation), std::move(requests));
}

void Router::run(std::shared_ptr<Generation> generation, std::vector<engine::GenerationRequest> requests) {
    // A client that goes away cancels every request of its generation.
    generation->responder->on_disconnect([weak = std::weak_ptr<Generation>(generation), this] {
        auto g = weak.lock();
        if (!g) return;
        std::vector<actors::RequestHandle> handles;
        {
            std::lock_guard lock(g->mutex);
            g->gone = true;
            for (const auto& p : g->parts) {
                if (p.handle) handles.push_back(*p.handle);
            }
        }
        for (actors::RequestHandle h : handles) service_.cancel(h);
    });
    for (size_t i = 0; i < requests.size(); ++i) {
        actors::RequestHandle handle = 0;
        try {
            handle = service_.submit(std::move(requests[i]),
                                     [generation, i](actors::StreamEvent event) { generation->on_event(i, std::move(event)); });
        } catch (const std::exception& e) {
            std::vector<actors::RequestHandle> submitted;
            {
                std::lock_guard lock(generation->mutex);
                generation->aborted = true;
                for (const auto& p : generation->parts) {
                    if (p.handle) submitted.push_back(*p.handle);
                }
            }
            for (actors::RequestHandle h : submitted) service_.cancel(h);
            if (dynamic_cast<const actors::Overloaded*>(&e)) {
                ApiError error(503, std::string("server overloaded: ") + e.what() + "; retry later");
                error.headers.emplace_back("Retry-After", std::to_string(options_.retry_after_seconds));
                throw error;
            }
            if (dynamic_cast<const std::invalid_argument*>(&e)) throw ApiError(400, e.what());
            throw;
        }
        bool gone = false;
        {
            std::lock_guard lock(generation->mutex);
            generation->parts[i].handle = handle;
            gone = generation->gone;
        }
        if (gone) service_.cancel(handle);
    }
    std::lock_guard lock(generation->mutex);
    generation->started = true;
    if (generation->stream) generation->responder->start_events();
    generation->pump();
}

}  // namespace tf::http
