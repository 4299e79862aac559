#include "tokenizer/normalize.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "tokenizer/error.h"
#include "tokenizer/utf8.h"

namespace tf::tokenizer {

namespace {

bool is_ascii(std::string_view text) {
    for (char c : text) {
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    }
    return true;
}

std::string unicode_normalize(std::string_view text, NormalizeStep::Kind kind) {
    // Every normalization form leaves ASCII unchanged: the common case costs a scan.
    if (is_ascii(text)) return std::string(text);
    int options = UTF8PROC_STABLE;
    switch (kind) {
        case NormalizeStep::Kind::nfc: options |= UTF8PROC_COMPOSE; break;
        case NormalizeStep::Kind::nfd: options |= UTF8PROC_DECOMPOSE; break;
        case NormalizeStep::Kind::nfkc: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
        default: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
    }
    utf8proc_uint8_t* mapped = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                            static_cast<utf8proc_ssize_t>(text.size()), &mapped,
                                            static_cast<utf8proc_option_t>(options));
    std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
    if (n < 0) throw TokenizerError(std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
    return std::string(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
}

std::string lowercase(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    size_t at = 0;
    while (at < text.size()) {
        const char32_t c = utf8::next_code_point(text, at);
        utf8::append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
    return out;
}

std::string replace_all(std::string_view text, std::string_view pattern, std::string_view replacement) {
    if (pattern.empty()) return std::string(text);
    std::string out;
    out.reserve(text.size());
    size_t at = 0;
    for (;;) {
        const size_t hit = text.find(pattern, at);
        if (hit == std::string_view::npos) break;
        out.append(text.substr(at, hit - at));
        out.append(replacement);
        at = hit + pattern.size();
    }
    out.append(text.substr(at));
    return out;
}

std::string strip(std::string_view text, bool left, bool right) {
    size_t begin = 0, end = text.size();
    if (left) {
        while (begin < end) {
            size_t at = begin;
            if (!utf8::is_whitespace(utf8::next_code_point(text, at))) break;
            begin = at;
        }
    }
    if (right) {
        while (end > begin) {
            size_t start = end - 1;
            while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
            size_t at = start;
            if (!utf8::is_whitespace(utf8::next_code_point(text, at))) break;
            end = start;
        }
    }
    return std::string(text.substr(begin, end - begin));
}

}  // namespace

std::string Normalizer::apply(std::string_view text) const {
    std::string current(text);
    for (const NormalizeStep& step : steps_) {
        switch (step.kind) {
            case NormalizeStep::Kind::nfc:
            case NormalizeStep::Kind::nfd:
            case NormalizeStep::Kind::nfkc:
            case NormalizeStep::Kind::nfkd: current = unicode_normalize(current, step.kind); break;
            case NormalizeStep::Kind::lowercase: current = lowercase(current); break;
            case NormalizeStep::Kind::prepend:
                // HF's Prepend leaves an empty string empty.
                if (!current.empty()) current = step.text + current;
                break;
            case NormalizeStep::Kind::replace: current = replace_all(current, step.text, step.replacement); break;
            case NormalizeStep::Kind::strip: current = strip(current, step.strip_left, step.strip_right); break;
        }
    }
    return current;
}

}  // namespace tf::tokenizer
