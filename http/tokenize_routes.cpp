// POST /tokenize, /detokenize and /apply-template: llama.cpp server's
// tools for looking at what the model reads. They use the very tokenizer
// and chat-template rendering the generation routes use (chat_prompt), so
// /apply-template's prompt and /tokenize's ids are what a chat completion
// of the same body would run.
#include "http/generation.h"
#include "http/router.h"
#include "http/tokenize_request.h"

namespace tf::http {

void Router::tokenize(const HttpRequest& http, const std::shared_ptr<Responder>& responder) const {
    const TokenizeRequest parsed = parse_tokenize_request(http.body);
    std::vector<tokenizer::TokenId> ids;
    try {
        ids = tokenizer_.encode(parsed.content, parsed.parse_special, parsed.add_special);
    } catch (const tokenizer::TokenizerError& e) {
        throw bad_request("content", std::string("content: ") + e.what());
    }
    std::vector<TokenPiece> tokens;
    tokens.reserve(ids.size());
    for (tokenizer::TokenId id : ids) {
        tokens.push_back(
            {static_cast<int32_t>(id), parsed.with_pieces ? tokenizer_.token_to_piece(id) : std::string()});
    }
    responder->respond(200, generation_detail::kJson, tokenize_body(tokens, parsed.with_pieces));
}

void Router::detokenize(const HttpRequest& http, const std::shared_ptr<Responder>& responder) const {
    const DetokenizeRequest parsed = parse_detokenize_request(http.body);
    std::vector<tokenizer::TokenId> ids;
    ids.reserve(parsed.tokens.size());
    for (size_t i = 0; i < parsed.tokens.size(); ++i) {
        const int64_t id = parsed.tokens[i];
        // Ids past the tokenizer (a model's padded embedding rows) have no text.
        if (id < 0 || id >= tokenizer_.vocab_size() || !tokenizer_.has_piece(static_cast<tokenizer::TokenId>(id))) {
            throw bad_request("tokens", "tokens[" + std::to_string(i) + "]: " + std::to_string(id) +
                                            " is not a token of this vocabulary (0 to " +
                                            std::to_string(tokenizer_.vocab_size() - 1) + ")");
        }
        ids.push_back(static_cast<tokenizer::TokenId>(id));
    }
    responder->respond(200, generation_detail::kJson, detokenize_body(tokenizer_.decode(ids)));
}

// The body is a chat completion's (messages, tools, chat_template_kwargs,
// add_generation_prompt), read by the same parser, so the prompt shown is
// the one /v1/chat/completions would generate from.
void Router::apply_template(const HttpRequest& http, const std::shared_ptr<Responder>& responder) const {
    const ChatRequest parsed = parse_chat_request(http.body);
    check_model(parsed.model);
    responder->respond(200, generation_detail::kJson, apply_template_body(chat_prompt(parsed).text));
}

}  // namespace tf::http
