// The engine's view of a streaming detokenizer: token ids in, complete
// UTF-8 text out. The tokenizer's streaming detokenizer implements it; the
// engine needs text only for stop strings and for the replies it reports.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "model/backend.h"

namespace tf::engine {

class TextDecoder {
public:
    virtual ~TextDecoder() = default;
    // Text completed by this token (possibly empty: a character split across
    // tokens is held back until it is whole).
    virtual std::string push(model::TokenId token) = 0;
    // What is still held back at the end of the reply.
    virtual std::string flush() = 0;
};

using TextDecoderFactory = std::function<std::unique_ptr<TextDecoder>()>;

}  // namespace tf::engine
