#include "tokenizer/utf8.h"

namespace tf::tokenizer::utf8 {

namespace {

// How many bytes of a sequence starting at text[at] are well formed so far
// (Unicode Table 3-7), and how long the whole sequence must be.
struct Prefix {
    size_t valid = 0;
    size_t needed = 0;
};

Prefix well_formed_prefix(std::string_view text, size_t at) {
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char b0 = byte(at);
    if (b0 < 0x80) return {1, 1};
    size_t needed = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        needed = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        needed = 3;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        needed = 4;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        return {0, 1};
    }
    size_t valid = 1;
    for (size_t k = 1; k < needed && at + k < text.size(); ++k) {
        const unsigned char b = byte(at + k);
        const unsigned char min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
        if (b < min || b > max) break;
        ++valid;
    }
    return {valid, needed};
}

}  // namespace

size_t sequence_length(std::string_view text, size_t at) {
    if (at >= text.size()) return 0;
    Prefix p = well_formed_prefix(text, at);
    return p.valid == p.needed ? p.needed : 0;
}

size_t first_invalid(std::string_view text) {
    size_t at = 0;
    while (at < text.size()) {
        if (static_cast<unsigned char>(text[at]) < 0x80) {
            ++at;
            continue;
        }
        size_t n = sequence_length(text, at);
        if (n == 0) return at;
        at += n;
    }
    return std::string_view::npos;
}

std::string lossy(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    size_t at = 0;
    while (at < bytes.size()) {
        if (static_cast<unsigned char>(bytes[at]) < 0x80) {
            out.push_back(bytes[at++]);
            continue;
        }
        Prefix p = well_formed_prefix(bytes, at);
        if (p.valid == p.needed) {
            out.append(bytes.substr(at, p.needed));
            at += p.needed;
        } else {
            out.append("\xEF\xBF\xBD");
            at += p.valid == 0 ? 1 : p.valid;
        }
    }
    return out;
}

size_t incomplete_tail(std::string_view bytes) {
    const size_t n = bytes.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const size_t at = n - back;
        const unsigned char b = static_cast<unsigned char>(bytes[at]);
        if (b < 0x80) return 0;
        if (b >= 0xC0) {
            Prefix p = well_formed_prefix(bytes, at);
            return (p.valid == back && p.needed > back) ? back : 0;
        }
    }
    return 0;
}

char32_t next_code_point(std::string_view text, size_t& at) {
    const auto b = [&](size_t i) { return static_cast<char32_t>(static_cast<unsigned char>(text[i])); };
    char32_t c = b(at);
    if (c < 0x80) {
        at += 1;
        return c;
    }
    size_t n = sequence_length(text, at);
    if (n == 0) {
        at += 1;
        return 0xFFFD;
    }
    if (n == 2) c = ((c & 0x1F) << 6) | (b(at + 1) & 0x3F);
    if (n == 3) c = ((c & 0x0F) << 12) | ((b(at + 1) & 0x3F) << 6) | (b(at + 2) & 0x3F);
    if (n == 4) c = ((c & 0x07) << 18) | ((b(at + 1) & 0x3F) << 12) | ((b(at + 2) & 0x3F) << 6) | (b(at + 3) & 0x3F);
    at += n;
    return c;
}

void append(std::string& out, char32_t c) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

bool is_whitespace(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace tf::tokenizer::utf8
