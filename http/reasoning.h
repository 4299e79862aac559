// Reasoning kept apart from the answer: a model taught to think first
// (Qwen3, DeepSeek R1, Nemotron) writes "<think> ... </think>" before its
// reply. The markers are read from the chat template, as tool-call forms
// are (tool_calls.h); a ReasoningStream splits a reply as it streams in, so
// the Messages route can send the thoughts as a thinking block and the
// answer as text.
//
// Only a reply that opens with the marker (after whitespace) is split:
// "<think>" later in a reply is the model talking about the tag. Templates
// that open the thought themselves (the generation prompt ends in
// "<think>") start the stream inside it.
//
// Pure logic; a ReasoningStream is single-threaded (one per reply).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tf::http {

struct ReasoningMarkers {
    std::string open;   // empty: the model does not mark its reasoning
    std::string close;
    bool present() const { return !open.empty(); }
};

// "<think>"/"</think>" when the template mentions them; none otherwise.
ReasoningMarkers reasoning_markers(std::string_view template_source);

// Whether a rendered prompt leaves the model inside its reasoning: it ends
// with the open marker (and maybe whitespace).
bool prompt_opens_reasoning(std::string_view prompt, const ReasoningMarkers& markers);

struct ReplyPiece {
    bool reasoning = false;
    std::string text;
};

// Whitespace that only separates (after "<think>", before and after
// "</think>") is dropped, so neither part begins or ends with it.
class ReasoningStream {
public:
    ReasoningStream(ReasoningMarkers markers, bool starts_inside);

    std::vector<ReplyPiece> feed(std::string_view text);
    // The reply has ended: what is held back goes out (a thought cut short
    // by max_tokens stays a thought).
    std::vector<ReplyPiece> finish();

private:
    enum class State { before, inside, after };
    void process(bool final, std::vector<ReplyPiece>& out);

    ReasoningMarkers markers_;
    State state_;
    std::string pending_;            // text not yet given
    bool reasoning_started_ = false; // some reasoning text has gone out
    bool answer_started_ = false;    // after the close: some answer text has gone out
};

}  // namespace tf::http
