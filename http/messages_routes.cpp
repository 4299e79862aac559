// POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API
// as a translation at the edge. The body becomes the native ChatRequest
// (anthropic_request.h), its prompt is rendered and run exactly as a chat
// completion's (chat_prompt, chat_generation_request, run), and the reply is
// written in Anthropic's shapes by a MessagesWriter (anthropic_response.h).
// So the same conversation is the same token ids on either route: the prompt
// cache and Recall serve both alike.
#include <ctime>

#include "http/anthropic_request.h"
#include "http/anthropic_response.h"
#include "http/generation.h"
#include "http/router.h"
#include "http/thinking_budget.h"

namespace tf::http {

void Router::messages(const HttpRequest& http, const std::shared_ptr<Responder>& responder, Clock::time_point arrival) {
    const MessagesRequest parsed = parse_messages_request(http.body);
    check_model(parsed.chat.model);
    const ChatPrompt prompt = chat_prompt(parsed.chat);
    engine::GenerationRequest request = chat_generation_request(prompt, parsed.chat);
    const ReasoningMarkers markers = reasoning_markers(tokenizer_.tools_template_source());
    const bool starts_in_reasoning = prompt_opens_reasoning(prompt.text, markers);
    // budget_tokens caps the thought where the model marks it with tokens of
    // their own; a forced tool call already leaves no room for thinking.
    if (parsed.thinking_budget && parsed.thinking.value_or(false) && !request.constraint) {
        request.constraint = thinking_budget(tokenizer_, markers, starts_in_reasoning, *parsed.thinking_budget,
                                             options_.vocab_size);
    }

    auto generation = std::make_shared<Generation>();
    Generation::Part part;
    part.prompt_tokens = static_cast<int64_t>(prompt.ids.size());
    std::vector<engine::GenerationRequest> requests;
    generation->chat = true;
    generation->stream = parsed.chat.sampling.stream;
    generation->token_ids = parsed.chat.sampling.return_token_ids;
    generation->add_choices(requests, part, request, 1);
    generation->tokenizer = &tokenizer_;
    generation->stop_strings = parsed.chat.sampling.stop;
    // The reply names the model as the request did: a client that asked for
    // an alias sees the name it knows.
    const std::string model = parsed.chat.model.empty() ? options_.served_model_name : parsed.chat.model;
    MessagesReplySetup setup;
    setup.id = "msg_" + generation_detail::random_hex(24);
    setup.model = model;
    setup.tool_format = prompt.tool_format;
    setup.reasoning = markers;
    setup.starts_in_reasoning = starts_in_reasoning;
    setup.prompt_tokens = part.prompt_tokens;
    generation->writer = std::make_unique<MessagesWriter>(std::move(setup));
    generation->header = {"msg", static_cast<int64_t>(std::time(nullptr)), model};
    generation->responder = responder;
    generation->arrival = arrival;
    generation->timings = &timings_;
    run(std::move(generation), std::move(requests));
}

// The prompt's size as /v1/messages would run it: the same rendering.
void Router::count_tokens(const HttpRequest& http, const std::shared_ptr<Responder>& responder) const {
    const MessagesRequest parsed = parse_messages_request(http.body, /*count_only=*/true);
    check_model(parsed.chat.model);
    const ChatPrompt prompt = chat_prompt(parsed.chat);
    responder->respond(200, generation_detail::kJson, count_tokens_body(static_cast<int64_t>(prompt.ids.size())));
}

}  // namespace tf::http
