#include "http/per_request_lines.h"

#include <array>

namespace tf::http {

namespace {

constexpr std::array<std::string_view, 1> kOpenings = {
    // Claude Code, for Anthropic's accounting; its cch= value differs on
    // every request. It tells the model nothing.
    "x-anthropic-billing-header:",
};

bool opens_per_request_line(std::string_view text) {
    for (std::string_view opening : kOpenings) {
        if (text.starts_with(opening)) return true;
    }
    return false;
}

}  // namespace

std::span<const std::string_view> per_request_line_openings() { return kOpenings; }

std::string without_per_request_lines(std::string_view system_text) {
    std::string_view rest = system_text;
    bool removed = false;
    while (opens_per_request_line(rest)) {
        const size_t end = rest.find('\n');
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
        removed = true;
    }
    // The blank lines that separated the removed lines from the prompt go
    // with them, so "line\n\nprompt" and "line\nprompt" both leave "prompt"
    // (a client that sends the line as a block of its own gets it joined to
    // the next block by a blank line).
    if (removed) {
        while (rest.starts_with('\n') || rest.starts_with("\r\n")) rest.remove_prefix(rest.starts_with('\n') ? 1 : 2);
    }
    return std::string(rest);
}

void set_aside_per_request_lines(std::vector<tokenizer::ChatMessage>& messages) {
    if (messages.empty() || !messages.front().content) return;
    tokenizer::ChatMessage& first = messages.front();
    if (first.role != "system" && first.role != "developer") return;
    if (!opens_per_request_line(*first.content)) return;
    first.content = without_per_request_lines(*first.content);
    if (first.content->empty()) messages.erase(messages.begin());
}

}  // namespace tf::http
