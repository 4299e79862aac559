#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace tf::tokenizer::byte_level {

namespace {

struct Tables {
    std::array<std::string, 256> char_of_byte;
    std::array<int, 324> byte_of_code_point;  // the alphabet lies within U+0000..U+0143

    Tables() {
        byte_of_code_point.fill(-1);
        // bytes_to_unicode() of GPT-2: printable Latin-1 bytes stand for
        // themselves, the others map to U+0100 upwards in byte order.
        int next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
            const int code_point = printable ? b : next++;
            utf8::append(char_of_byte[b], static_cast<char32_t>(code_point));
            byte_of_code_point[code_point] = b;
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

}  // namespace

std::string_view char_for_byte(unsigned char byte) { return tables().char_of_byte[byte]; }

std::optional<std::string> to_bytes(std::string_view token) {
    const Tables& t = tables();
    std::string out;
    out.reserve(token.size());
    size_t at = 0;
    while (at < token.size()) {
        if (utf8::sequence_length(token, at) == 0) return std::nullopt;
        const char32_t c = utf8::next_code_point(token, at);
        if (c >= t.byte_of_code_point.size() || t.byte_of_code_point[c] < 0) return std::nullopt;
        out.push_back(static_cast<char>(t.byte_of_code_point[c]));
    }
    return out;
}

std::string to_alphabet(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char b : bytes) out.append(char_for_byte(b));
    return out;
}

}  // namespace tf::tokenizer::byte_level
