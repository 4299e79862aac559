#include "engine/request.h"

#include <stdexcept>

namespace tf::engine {

const char* to_string(FinishReason reason) {
    switch (reason) {
        case FinishReason::running: return "running";
        case FinishReason::stop_token: return "stop";
        case FinishReason::stop_string: return "stop";
        case FinishReason::length: return "length";
        case FinishReason::context_full: return "length";
        case FinishReason::cancelled: return "cancelled";
    }
    return "?";
}

void check_request(const GenerationRequest& request, int32_t vocab, int32_t context_size, bool can_decode_text) {
    if (request.prompt.empty()) throw std::invalid_argument("prompt: must hold at least one token");
    if (static_cast<int64_t>(request.prompt.size()) >= context_size) {
        throw std::invalid_argument("prompt: " + std::to_string(request.prompt.size()) +
                                    " tokens leave no room in the context of " + std::to_string(context_size));
    }
    for (TokenId token : request.prompt) {
        if (token < 0 || token >= vocab) {
            throw std::invalid_argument("prompt: token id " + std::to_string(token) + " is outside the vocabulary [0, " +
                                        std::to_string(vocab) + ")");
        }
    }
    if (request.max_tokens < 1) throw std::invalid_argument("max_tokens: must be at least 1");
    if (!request.stop_strings.empty() && !can_decode_text) {
        throw std::invalid_argument("stop: stop strings need a tokenizer to decode the reply");
    }
}

DraftCounters& DraftCounters::operator+=(const DraftCounters& o) {
    rounds += o.rounds;
    own_drafted += o.own_drafted;
    own_landed += o.own_landed;
    copies_offered += o.copies_offered;
    copy_drafted += o.copy_drafted;
    copy_landed += o.copy_landed;
    return *this;
}

}  // namespace tf::engine
