#include "http/reasoning.h"

namespace tf::http {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

size_t first_non_space(std::string_view text) {
    size_t i = 0;
    while (i < text.size() && is_space(text[i])) ++i;
    return i;
}

// Length of `text` without its trailing whitespace.
size_t trimmed_length(std::string_view text) {
    size_t n = text.size();
    while (n > 0 && is_space(text[n - 1])) --n;
    return n;
}

// The longest end of `text` that `marker` starts with (a marker cut short).
size_t partial_marker(std::string_view text, std::string_view marker) {
    for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
        if (marker.starts_with(text.substr(text.size() - n))) return n;
    }
    return 0;
}

}  // namespace

ReasoningMarkers reasoning_markers(std::string_view template_source) {
    if (template_source.find("<think>") != std::string_view::npos &&
        template_source.find("</think>") != std::string_view::npos) {
        return {"<think>", "</think>"};
    }
    return {};
}

bool prompt_opens_reasoning(std::string_view prompt, const ReasoningMarkers& markers) {
    if (!markers.present()) return false;
    return prompt.substr(0, trimmed_length(prompt)).ends_with(markers.open);
}

ReasoningStream::ReasoningStream(ReasoningMarkers markers, bool starts_inside)
    : markers_(std::move(markers)),
      state_(!markers_.present() ? State::after : starts_inside ? State::inside : State::before),
      answer_started_(!markers_.present()) {}

std::vector<ReplyPiece> ReasoningStream::feed(std::string_view text) {
    pending_ += text;
    std::vector<ReplyPiece> out;
    process(false, out);
    return out;
}

std::vector<ReplyPiece> ReasoningStream::finish() {
    std::vector<ReplyPiece> out;
    process(true, out);
    return out;
}

void ReasoningStream::process(bool final, std::vector<ReplyPiece>& out) {
    if (state_ == State::before) {
        const std::string_view rest = std::string_view(pending_).substr(first_non_space(pending_));
        if (rest.starts_with(markers_.open)) {
            pending_ = std::string(rest.substr(markers_.open.size()));
            state_ = State::inside;
        } else if ((rest.empty() || markers_.open.starts_with(rest)) && !final) {
            return;  // maybe the marker, cut short
        } else {
            // No reasoning: the reply is all answer, its whitespace as written.
            state_ = State::after;
            answer_started_ = true;
        }
    }
    if (state_ == State::inside) {
        if (!reasoning_started_) pending_.erase(0, first_non_space(pending_));
        const size_t close = pending_.find(markers_.close);
        // What may go out now: all of it before the close marker; without
        // one, all but a marker cut short and the whitespace before it
        // (which is dropped if the marker follows).
        size_t given = close != std::string::npos ? close
                       : final                   ? pending_.size()
                                                 : pending_.size() - partial_marker(pending_, markers_.close);
        const size_t trimmed = trimmed_length(std::string_view(pending_).substr(0, given));
        if (trimmed > 0) {
            out.push_back({true, pending_.substr(0, trimmed)});
            reasoning_started_ = true;
        }
        if (close == std::string::npos) {
            pending_.erase(0, final ? pending_.size() : trimmed);
            return;
        }
        pending_.erase(0, close + markers_.close.size());
        state_ = State::after;
    }
    if (!answer_started_) pending_.erase(0, first_non_space(pending_));
    if (pending_.empty()) return;
    out.push_back({false, std::move(pending_)});
    pending_.clear();
    answer_started_ = true;
}

}  // namespace tf::http
