// POST /v1/responses: OpenAI's Responses API as a translation at the edge,
// as /v1/messages is (messages_routes.cpp). The body becomes the native
// ChatRequest (responses_request.h), its prompt is rendered and run exactly
// as a chat completion's, and a ResponsesWriter (responses_response.h)
// writes the reply as output items. So the prompt cache and Recall serve
// this route as they serve the others.
#include <ctime>

#include "http/generation.h"
#include "http/responses_request.h"
#include "http/responses_response.h"
#include "http/router.h"

namespace tf::http {

void Router::responses(const HttpRequest& http, const std::shared_ptr<Responder>& responder, Clock::time_point arrival) {
    ResponsesRequest parsed = parse_responses_request(http.body);
    check_model(parsed.chat.model);
    const ReasoningMarkers markers = reasoning_markers(tokenizer_.tools_template_source());
    // reasoning.effort switches thinking on (or off, "none") where the model
    // marks its thoughts; Qwen3-style templates read enable_thinking.
    if (parsed.thinking && markers.present()) {
        parsed.chat.template_variables.emplace_back("enable_thinking", *parsed.thinking ? "true" : "false");
    }
    const ChatFields fields{"input", "max_output_tokens"};
    const ChatPrompt prompt = chat_prompt(parsed.chat, fields);
    const engine::GenerationRequest request = chat_generation_request(prompt, parsed.chat, fields);

    auto generation = std::make_shared<Generation>();
    Generation::Part part;
    part.prompt_tokens = static_cast<int64_t>(prompt.ids.size());
    std::vector<engine::GenerationRequest> requests;
    generation->chat = true;
    generation->stream = parsed.chat.sampling.stream;
    generation->token_ids = parsed.chat.sampling.return_token_ids;
    generation->add_choices(requests, part, request, 1);
    generation->tokenizer = &tokenizer_;
    // The reply names the model as the request did (an alias stays itself).
    const std::string model = parsed.chat.model.empty() ? options_.served_model_name : parsed.chat.model;
    const auto created_at = static_cast<int64_t>(std::time(nullptr));
    ResponsesReplySetup setup;
    setup.id = "resp_" + generation_detail::random_hex(32);
    setup.model = model;
    setup.created_at = created_at;
    setup.echoed_json = std::move(parsed.echoed_json);
    setup.tool_format = prompt.tool_format;
    setup.reasoning = markers;
    setup.starts_in_reasoning = prompt_opens_reasoning(prompt.text, markers);
    // usage's reasoning_tokens: the thoughts' text encoded again, which is
    // the count the model wrote them in save where a token straddled the
    // close marker.
    setup.count_tokens = [tokenizer = &tokenizer_](std::string_view text) -> int64_t {
        // A thought cut by max_output_tokens may end inside a character,
        // which encode() refuses: its last bytes are left out of the count.
        for (size_t cut = 0; cut < 4 && cut < text.size(); ++cut) {
            try {
                return static_cast<int64_t>(tokenizer->encode(text.substr(0, text.size() - cut), false, false).size());
            } catch (const tokenizer::TokenizerError&) {
            }
        }
        return 0;
    };
    generation->writer = std::make_unique<ResponsesWriter>(std::move(setup));
    generation->header = {"resp", created_at, model};
    generation->responder = responder;
    generation->arrival = arrival;
    generation->timings = &timings_;
    run(std::move(generation), std::move(requests));
}

}  // namespace tf::http
