// The engine's TextDecoder over the tokenizer's streaming Detokenizer: reply
// text that never splits a UTF-8 character, for stop strings and replies.
#pragma once

#include "engine/text_decoder.h"
#include "tokenizer/tokenizer.h"

namespace tf::engine {

// One Detokenizer per stream, each reading `tokenizer` (kept alive by copy:
// Tokenizer copies share their state). Special tokens are not shown.
TextDecoderFactory tokenizer_text(const tokenizer::Tokenizer& tokenizer);

}  // namespace tf::engine
