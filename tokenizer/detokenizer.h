// Streaming detokenization: ids arrive one at a time (a reply being decoded)
// and text leaves as soon as it is complete UTF-8. A character whose bytes
// are split across tokens is held back until its last byte arrives, so an SSE
// chunk never carries broken UTF-8; bytes that can never become a character
// leave as U+FFFD, exactly where decode() would put them. The concatenation
// of everything push() and finish() return equals decode() of all the ids,
// except that an id with no piece (a padded embedding row a model sampled)
// adds nothing here, where decode() refuses it.
//
// One Detokenizer per stream; not thread-safe (the Tokenizer it reads is).
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

class Detokenizer {
public:
    // `continuation`: the ids continue text already shown (a reply after its
    // prompt), so the decoder's strip at the start of text does not apply.
    explicit Detokenizer(const Tokenizer& tokenizer, bool skip_special_tokens = true, bool continuation = false);

    // The text that became complete with this token (often empty while a
    // character is incomplete). Throws TokenizerError for an unknown id.
    std::string push(TokenId id);
    // Everything still held back (an incomplete character becomes U+FFFD).
    std::string finish();

private:
    std::string take(size_t end);

    Tokenizer tokenizer_;
    bool skip_special_;
    size_t strip_left_;   // leading spaces still to strip at the start of the text
    std::string held_;    // bytes received but not yet returned
};

}  // namespace tf::tokenizer
