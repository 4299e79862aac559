#include "tokenizer/detokenizer.h"

#include <algorithm>
#include <string_view>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace tf::tokenizer {

namespace {

// clean_up_tokenization rewrites short patterns that start with a space
// (" .", " n't", ...): the text may be cut only where no pattern that
// matches, or may still match once more bytes come, straddles the cut.
size_t clean_up_safe_end(const std::string& held, size_t end) {
    static const std::string_view patterns[] = {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's", " 've", " 're"};
    const auto straddles = [&](size_t cut) {
        for (size_t p = cut >= 3 ? cut - 3 : 0; p < cut; ++p) {
            if (held[p] != ' ') continue;
            for (std::string_view pattern : patterns) {
                if (p + pattern.size() <= cut) continue;
                const size_t known = std::min(pattern.size(), end - p);
                if (std::string_view(held).substr(p, known) == pattern.substr(0, known)) return true;
            }
        }
        return false;
    };
    while (end > 0 && straddles(end)) --end;
    return end;
}

}  // namespace

Detokenizer::Detokenizer(const Tokenizer& tokenizer, bool skip_special_tokens, bool continuation)
    : tokenizer_(tokenizer),
      skip_special_(skip_special_tokens),
      strip_left_(continuation ? 0 : tokenizer.impl_->strip_leading_spaces) {}

std::string Detokenizer::push(TokenId id) {
    // A model may sample a padded embedding row its tokenizer has no piece
    // for (vocab_size past the tokenizer's): like transformers' decode, it
    // adds no text, and the reply goes on.
    if (!tokenizer_.has_piece(id)) return {};
    const std::string& piece = tokenizer_.token_to_piece(id);
    if (skip_special_ && tokenizer_.is_special(id)) return {};
    held_ += piece;
    // The decoder strips spaces at the very start of the text (Llama 2's
    // Strip, Metaspace): drop them as they arrive, until other bytes come.
    while (strip_left_ > 0 && !held_.empty()) {
        if (held_[0] != ' ') {
            strip_left_ = 0;
            break;
        }
        held_.erase(0, 1);
        --strip_left_;
    }
    if (strip_left_ > 0) return {};

    size_t end = held_.size() - utf8::incomplete_tail(held_);
    if (tokenizer_.impl_->clean_up_spaces) end = clean_up_safe_end(held_, end);
    return take(end);
}

std::string Detokenizer::finish() {
    strip_left_ = 0;
    return take(held_.size());
}

std::string Detokenizer::take(size_t end) {
    if (end == 0) return {};
    std::string text = utf8::lossy(std::string_view(held_).substr(0, end));
    held_.erase(0, end);
    return tokenizer_.impl_->clean_up_spaces ? clean_up_tokenization(std::move(text)) : text;
}

}  // namespace tf::tokenizer
