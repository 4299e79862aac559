#include "engine/tokenizer_text.h"

#include "tokenizer/detokenizer.h"

namespace tf::engine {

namespace {

class DetokenizerText final : public TextDecoder {
public:
    explicit DetokenizerText(const tokenizer::Tokenizer& tokenizer)
        : detokenizer_(tokenizer, /*skip_special_tokens=*/true, /*continuation=*/true) {}
    std::string push(model::TokenId token) override { return detokenizer_.push(token); }
    std::string flush() override { return detokenizer_.finish(); }

private:
    tokenizer::Detokenizer detokenizer_;
};

}  // namespace

TextDecoderFactory tokenizer_text(const tokenizer::Tokenizer& tokenizer) {
    return [tokenizer]() -> std::unique_ptr<TextDecoder> { return std::make_unique<DetokenizerText>(tokenizer); };
}

}  // namespace tf::engine
