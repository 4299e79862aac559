// POST /v1/completions and /v1/chat/completions: validate, tokenize, submit
// one engine request per prompt, and answer with one JSON body at the end or
// with SSE chunks as the rounds land. A chat request with tools has each
// choice's reply split into content and tool calls (tool_calls.h).
#include <algorithm>
#include <ctime>
#include <mutex>
#include <random>

#include "http/api_error.h"
#include "http/fim.h"
#include "http/generation.h"
#include "http/openai_response.h"
#include "http/per_request_lines.h"
#include "http/reasoning.h"
#include "http/router.h"
#include "http/tool_calls.h"

namespace tf::http {

namespace {

using generation_detail::random_hex;

// Requests without a seed get a random one, so two of them differ.
uint64_t random_seed() {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace

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

// No model named: the one served (what llama-server and vLLM do); so is a
// name --model-alias gives it, or any name with --model-alias '*'. Another
// name is a 404 with OpenAI's "model_not_found" code, so clients that switch
// models on that code keep working.
void Router::check_model(const std::string& model) const {
    if (model.empty() || model == options_.served_model_name) return;
    for (const std::string& alias : options_.model_aliases) {
        if (alias == "*" || alias == model) return;
    }
    ApiError error(404, "model: '" + model + "' is not served here; this server serves '" + options_.served_model_name +
                            "' (GET /v1/models; `serve --model-alias NAME` adds a name, --model-alias '*' takes any)",
                   "model");
    error.code = "model_not_found";
    throw error;
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
                                                     const std::string& field, const std::string& max_tokens_field) const {
    const auto length = static_cast<int32_t>(prompt.size());
    if (length >= options_.ctx_size) {
        throw bad_request(field, field + ": " + std::to_string(length) + " tokens leave no room for a reply in the context of " +
                                     std::to_string(options_.ctx_size) + " tokens");
    }
    const int32_t room = options_.ctx_size - length;
    if (sampling.max_tokens && *sampling.max_tokens > room) {
        throw bad_request(max_tokens_field, max_tokens_field + ": " + std::to_string(*sampling.max_tokens) + " and the prompt's " +
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

// "suffix": the prompt becomes the vocabulary's fill-in-the-middle form
// (fim.h), so the reply is the code between the prompt and the suffix.
// A vocabulary without FIM tokens was not trained for it: a 400, not a
// prompt the model would read as plain text and continue past the gap.
std::vector<model::TokenId> Router::fim_ids(const PromptInput& input, const std::string& suffix,
                                            const std::string& field) const {
    const std::optional<FimTokens> fim = find_fim_tokens(tokenizer_);
    if (!fim) {
        throw bad_request("suffix", "suffix: this model's vocabulary has no fill-in-the-middle tokens (such as "
                                    "<|fim_prefix|>, <|fim_suffix|>, <|fim_middle|>); send the prompt without a suffix");
    }
    if (!input.text) throw bad_request("suffix", "suffix: needs a text prompt, and " + field + " is token ids");
    std::vector<tokenizer::TokenId> encoded;
    try {
        encoded = fim_prompt(tokenizer_, *fim, *input.text, suffix);
    } catch (const tokenizer::TokenizerError& e) {
        throw bad_request("suffix", field + " or suffix: " + e.what());
    }
    return {encoded.begin(), encoded.end()};
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
        if (parsed.suffix) {
            ids = fim_ids(input, *parsed.suffix, field);
            if (parsed.echo) part.prefix = *input.text;
        } else if (input.text) {
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

// The prompt of a chat request: its conversation through the chat
// template, tokenized. Shared by every chat-like route (chat completions,
// Messages, count_tokens), so the same conversation is the same ids however
// it came, and the prompt cache resumes it across routes.
ChatPrompt Router::chat_prompt(const ChatRequest& parsed, const ChatFields& fields) const {
    if (!tokenizer_.has_chat_template()) {
        throw bad_request(fields.conversation, fields.conversation + ": this model has no chat template (tokenizer_config.json chat_template or "
                                      "chat_template.jinja); use /v1/completions");
    }
    // A template that never reads `tools` would drop them without a word:
    // the model would answer as if none were offered.
    if (!parsed.tools.empty() && !tokenizer_.supports_tools()) {
        throw bad_request("tools", "tools: the model's chat template does not accept tools");
    }
    tokenizer::ChatRequest conversation;
    conversation.add_generation_prompt = parsed.add_generation_prompt;
    for (const ChatMessage& m : parsed.messages) {
        tokenizer::ChatMessage message;
        message.role = m.role;
        message.content = m.content;
        message.tool_calls = m.tool_calls;
        message.tool_call_id = m.tool_call_id;
        message.name = m.name;
        message.reasoning_content = m.reasoning_content;
        conversation.messages.push_back(std::move(message));
    }
    // A line the client changes on every request (Claude Code's billing
    // line) would be the prompt's first tokens and leave nothing for the
    // prompt cache to resume: it is left out, whatever route brought it.
    set_aside_per_request_lines(conversation.messages);
    for (const ToolDefinition& tool : parsed.tools) conversation.tools_json.push_back(tool.entry_json);
    conversation.variables_json = parsed.template_variables;
    ChatPrompt prompt;
    try {
        // The template writes the special tokens itself (BOS included), so
        // nothing is added and special tokens' text is read as tokens.
        prompt.text = tokenizer_.render_chat(conversation);
        const std::vector<tokenizer::TokenId> encoded =
            tokenizer_.encode(prompt.text, /*allow_special=*/true, /*add_special_tokens=*/false);
        prompt.ids.assign(encoded.begin(), encoded.end());
    } catch (const tokenizer::TokenizerError& e) {
        throw bad_request(fields.conversation, fields.conversation + ": " + e.what());
    }
    // tool_choice "none": the model sees the tools but is not to call them,
    // so its reply is all content (OpenAI's meaning).
    prompt.tool_format = parsed.tool_choice.mode == ToolChoice::Mode::none
                             ? ToolCallFormat::none
                             : tool_call_format(tokenizer_.tools_template_source());
    return prompt;
}

// The engine request of a chat prompt: sampling, and a forced tool call
// when tool_choice asks for one.
engine::GenerationRequest Router::chat_generation_request(const ChatPrompt& prompt, const ChatRequest& parsed,
                                                          const ChatFields& fields) const {
    engine::GenerationRequest request = generation_request(prompt.ids, parsed.sampling, fields.conversation, fields.max_tokens);
    if (parsed.tool_choice.mode == ToolChoice::Mode::required || parsed.tool_choice.mode == ToolChoice::Mode::function) {
        request.constraint = forced_tool_call(prompt.tool_format, parsed);
    }
    return request;
}

void Router::chat_completions(const HttpRequest& http, const std::shared_ptr<Responder>& responder,
                              Clock::time_point arrival) {
    const ChatRequest parsed = parse_chat_request(http.body);
    check_model(parsed.model);
    const ChatPrompt prompt = chat_prompt(parsed);
    auto generation = std::make_shared<Generation>();
    Generation::Part part;
    part.prompt_tokens = static_cast<int64_t>(prompt.ids.size());
    if (parsed.sampling.return_token_ids) part.prompt_ids.assign(prompt.ids.begin(), prompt.ids.end());
    std::vector<engine::GenerationRequest> requests;
    const engine::GenerationRequest request = chat_generation_request(prompt, parsed);
    generation->chat = true;
    generation->tool_format = prompt.tool_format;
    // Thoughts go apart from the content (reasoning_content) wherever the
    // template marks them, as they do on the Messages and Responses routes.
    generation->reasoning = reasoning_markers(tokenizer_.tools_template_source());
    generation->starts_in_reasoning = prompt_opens_reasoning(prompt.text, generation->reasoning);
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
