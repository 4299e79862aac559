// The chat template's lexer, in two passes: the template into text and tags
// (with Jinja's whitespace control, trim_blocks and lstrip_blocks as
// transformers enables them), then one tag into tokens. Internal to
// chat_template/; parser.cpp is its only user. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace tf::tokenizer::chat {

struct Tag {
    enum class Kind { text, expression, statement } kind = Kind::text;
    std::string content;
    int line = 1;
};

struct Token {
    enum class Kind { name, string, integer, number, op, end } kind = Kind::end;
    std::string text;
};

// Throws TokenizerError naming the template line.
[[noreturn]] void fail(int line, const std::string& what);

std::vector<Tag> split_tags(std::string source);
std::vector<Token> lex(const std::string& s, int line);

}  // namespace tf::tokenizer::chat
