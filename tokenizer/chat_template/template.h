// A parsed chat template and its renderer: the Jinja subset that common chat
// templates use (if/elif/else, for with loop.* and else, set incl.
// namespace attributes and blocks, macro, break/continue, raw; filters,
// tests, string/dict/list methods, slicing, literals; raise_exception,
// namespace, range, strftime_now), with transformers' trim_blocks and
// lstrip_blocks. Anything outside it fails with a TokenizerError naming the
// construct and the line. Immutable after construction; render() is
// thread-safe (each call builds its own values).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat.h"
#include "tokenizer/chat_template/ast.h"
#include "tokenizer/chat_template/value.h"

namespace tf::tokenizer::chat {

class Template {
public:
    explicit Template(const std::string& source);

    // messages, add_generation_prompt, tools, the request's extra variables
    // and `special_tokens` (bos_token, eos_token, ...) as template variables.
    std::string render(const ChatRequest& request,
                       const std::vector<std::pair<std::string, std::string>>& special_tokens) const;

    // Renders with exactly these variables (tests, other callers).
    std::string render_with(const Object& variables) const;

    // Whether any expression of the template reads the variable `name`
    // (a template that never reads `tools` would drop a request's tools
    // without a word, so the server refuses them instead).
    bool reads_variable(const std::string& name) const;

    const std::string& source() const { return source_; }

private:
    std::string source_;
    Body body_;
};

// The conversation as template values (what render() passes as `messages`).
Value messages_value(const std::vector<ChatMessage>& messages);

}  // namespace tf::tokenizer::chat
