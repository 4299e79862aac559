#include "tokenizer/chat_template/lexer.h"

#include <algorithm>
#include <cctype>

#include "tokenizer/error.h"

namespace tf::tokenizer::chat {

void fail(int line, const std::string& what) {
    throw TokenizerError("chat template line " + std::to_string(line) + ": " + what);
}

// ---- first pass: text and tags --------------------------------------------

namespace {

// The line of a position. Tags are met in order, so each call counts on from
// the last one instead of from the start: counting from the start made a
// template of many small tags quadratic (seconds for 10,000 tags).
class LineCounter {
public:
    explicit LineCounter(const std::string& s) : s_(s) {}
    int operator()(size_t at) {
        if (at < counted_) {
            counted_ = 0;
            line_ = 1;
        }
        for (; counted_ < at && counted_ < s_.size(); ++counted_) line_ += s_[counted_] == '\n';
        return line_;
    }

private:
    const std::string& s_;
    size_t counted_ = 0;
    int line_ = 1;
};

}  // namespace

std::vector<Tag> split_tags(std::string source) {
    if (!source.empty() && source.back() == '\n') source.pop_back();  // keep_trailing_newline=False
    std::vector<Tag> tags;
    LineCounter line_at(source);
    bool trim_next_newline = false, strip_next_whitespace = false;
    size_t at = 0;
    while (at <= source.size()) {
        size_t open = source.find('{', at);
        while (open != std::string::npos && open + 1 < source.size() && source[open + 1] != '{' &&
               source[open + 1] != '%' && source[open + 1] != '#') {
            open = source.find('{', open + 1);
        }
        if (open != std::string::npos && open + 1 >= source.size()) open = std::string::npos;
        std::string text = source.substr(at, open == std::string::npos ? std::string::npos : open - at);

        char kind = 0, left = 0;
        if (open != std::string::npos) {
            kind = source[open + 1];
            left = open + 2 < source.size() ? source[open + 2] : 0;
        }
        // Whitespace control on the text before this tag.
        if (strip_next_whitespace) {
            size_t k = 0;
            while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k]))) ++k;
            text.erase(0, k);
        } else if (trim_next_newline) {
            if (text.rfind("\r\n", 0) == 0) {
                text.erase(0, 2);
            } else if (!text.empty() && text[0] == '\n') {
                text.erase(0, 1);
            }
        }
        if (kind != 0) {
            if (left == '-') {
                while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
            } else if ((kind == '%' || kind == '#') && left != '+') {
                // lstrip_blocks: spaces and tabs between a line start and a block tag go.
                size_t k = open;
                while (k > 0 && (source[k - 1] == ' ' || source[k - 1] == '\t')) --k;
                if (k == 0 || source[k - 1] == '\n') text.erase(text.size() - std::min(open - k, text.size()));
            }
        }
        if (!text.empty()) tags.push_back({Tag::Kind::text, text, line_at(at)});
        if (kind == 0) break;

        const char* close = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
        const size_t end = source.find(close, open + 2);
        if (end == std::string::npos) fail(line_at(open), std::string("'{") + kind + "' is never closed");
        size_t inner_begin = open + 2, inner_end = end;
        if (inner_begin < inner_end && (source[inner_begin] == '-' || source[inner_begin] == '+')) ++inner_begin;
        const bool strip_after = inner_end > inner_begin && source[inner_end - 1] == '-';
        if (strip_after || (inner_end > inner_begin && source[inner_end - 1] == '+')) --inner_end;
        std::string content = source.substr(inner_begin, inner_end - inner_begin);

        if (kind == '%') {
            // {% raw %}...{% endraw %} is text.
            size_t k = 0;
            while (k < content.size() && std::isspace(static_cast<unsigned char>(content[k]))) ++k;
            if (content.compare(k, 3, "raw") == 0 && content.find_first_not_of(" \t\r\n", k + 3) == std::string::npos) {
                size_t search = end + 2;
                for (;;) {
                    const size_t tag = source.find("{%", search);
                    if (tag == std::string::npos) fail(line_at(open), "'{% raw %}' is never closed");
                    size_t p = tag + 2;
                    if (p < source.size() && (source[p] == '-' || source[p] == '+')) ++p;
                    while (p < source.size() && std::isspace(static_cast<unsigned char>(source[p]))) ++p;
                    if (source.compare(p, 6, "endraw") == 0) {
                        tags.push_back({Tag::Kind::text, source.substr(end + 2, tag - end - 2), line_at(end)});
                        const size_t close_raw = source.find("%}", p);
                        if (close_raw == std::string::npos) fail(line_at(tag), "'{% endraw' is never closed");
                        at = close_raw + 2;
                        break;
                    }
                    search = tag + 2;
                }
                trim_next_newline = true;
                strip_next_whitespace = source[at - 3] == '-';
                continue;
            }
        }
        if (kind != '#') {
            tags.push_back({kind == '{' ? Tag::Kind::expression : Tag::Kind::statement, content, line_at(open)});
        }
        strip_next_whitespace = strip_after;
        trim_next_newline = kind != '{';
        at = end + 2;
    }
    return tags;
}

// ---- second pass: tokens of one tag ----------------------------------------

std::vector<Token> lex(const std::string& s, int line) {
    std::vector<Token> out;
    size_t i = 0;
    while (i < s.size()) {
        const char c = s[i];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            size_t j = i;
            while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
            out.push_back({Token::Kind::name, s.substr(i, j - i)});
            i = j;
        } else if (std::isdigit(static_cast<unsigned char>(c))) {
            size_t j = i;
            bool is_float = false;
            while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
            if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
                is_float = true;
                ++j;
                while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
            }
            std::string digits;
            for (size_t k = i; k < j; ++k) {
                if (s[k] != '_') digits.push_back(s[k]);
            }
            out.push_back({is_float ? Token::Kind::number : Token::Kind::integer, digits});
            i = j;
        } else if (c == '\'' || c == '"') {
            std::string text;
            size_t j = i + 1;
            for (; j < s.size() && s[j] != c; ++j) {
                if (s[j] == '\\' && j + 1 < s.size()) {
                    const char e = s[++j];
                    switch (e) {
                        case 'n': text.push_back('\n'); break;
                        case 't': text.push_back('\t'); break;
                        case 'r': text.push_back('\r'); break;
                        case '\\': text.push_back('\\'); break;
                        case '\'': text.push_back('\''); break;
                        case '"': text.push_back('"'); break;
                        default: text.push_back('\\'); text.push_back(e);
                    }
                } else {
                    text.push_back(s[j]);
                }
            }
            if (j >= s.size()) fail(line, "a string literal is never closed");
            out.push_back({Token::Kind::string, text});
            i = j + 1;
        } else {
            static const char* ops[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">", "=",
                                        "(", ")", "[", "]", "{", "}", ",", ".", ":", "|"};
            bool found = false;
            for (const char* op : ops) {
                const std::string_view o(op);
                if (s.compare(i, o.size(), o) == 0) {
                    out.push_back({Token::Kind::op, std::string(o)});
                    i += o.size();
                    found = true;
                    break;
                }
            }
            if (!found) fail(line, std::string("unexpected character '") + c + "'");
        }
    }
    out.push_back({Token::Kind::end, ""});
    return out;
}

}  // namespace tf::tokenizer::chat
