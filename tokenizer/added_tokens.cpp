#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace tf::tokenizer {

namespace {

bool is_word_char(char32_t c) {
    // single_word: a match must not touch letters, digits or '_' (HF checks
    // for word characters on either side).
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

char32_t code_point_before(std::string_view text, size_t at) {
    size_t start = at - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    return utf8::next_code_point(text, start);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens, bool normalized_pass) {
    for (const AddedToken& t : tokens) {
        if (t.normalized == normalized_pass && !t.content.empty()) tokens_.push_back(t);
    }
    for (uint32_t i = 0; i < tokens_.size(); ++i) {
        by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
    }
    for (auto& bucket : by_first_byte_) {
        std::stable_sort(bucket.begin(), bucket.end(), [&](uint32_t a, uint32_t b) {
            return tokens_[a].content.size() > tokens_[b].content.size();
        });
    }
}

void AddedTokenMatcher::split(std::string_view text, bool allow_special, std::vector<Segment>& out) const {
    size_t plain_start = 0;  // where the current plain-text segment begins
    size_t at = 0;
    while (at < text.size()) {
        const auto& bucket = by_first_byte_[static_cast<unsigned char>(text[at])];
        const AddedToken* found = nullptr;
        for (uint32_t index : bucket) {
            const AddedToken& t = tokens_[index];
            if (t.special && !allow_special) continue;
            if (text.compare(at, t.content.size(), t.content) != 0) continue;
            if (t.single_word) {
                const size_t end = at + t.content.size();
                size_t after = end;
                if ((at > 0 && is_word_char(code_point_before(text, at))) ||
                    (end < text.size() && is_word_char(utf8::next_code_point(text, after)))) {
                    continue;
                }
            }
            found = &t;
            break;
        }
        if (found == nullptr) {
            ++at;
            continue;
        }
        size_t begin = at, end = at + found->content.size();
        if (found->lstrip) {
            while (begin > plain_start) {
                size_t start = begin - 1;
                while (start > plain_start && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
                size_t probe = start;
                if (!utf8::is_whitespace(utf8::next_code_point(text, probe))) break;
                begin = start;
            }
        }
        if (found->rstrip) {
            while (end < text.size()) {
                size_t probe = end;
                if (!utf8::is_whitespace(utf8::next_code_point(text, probe))) break;
                end = probe;
            }
        }
        if (begin > plain_start) out.push_back({plain_start, begin, false, 0});
        out.push_back({begin, end, true, found->id});
        at = end;
        plain_start = end;
    }
    if (plain_start < text.size()) out.push_back({plain_start, text.size(), false, 0});
}

}  // namespace tf::tokenizer
