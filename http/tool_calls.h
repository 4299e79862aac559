// Tool calls in a chat reply: which form the model writes them in (read from
// its chat template), taking them out of the reply text, whole or as the
// text streams in, and the JSON Schema that forces one (tool_choice
// "required" or a named function, once constrained decoding exists).
//
// Two forms are understood:
//   hermes  (Qwen, Hermes): <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>,
//           once or several times, with text around them.
//   llama3  (Llama 3.1+ JSON tool calling): the whole reply is
//           {"name": "f", "parameters": {...}}, maybe after <|python_tag|>.
// Text that looks like a call but does not parse as one stays content.
//
// Pure logic; a ToolCallStream is single-threaded (one per choice).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tf::http {

enum class ToolCallFormat { none, hermes, llama3 };

// The form a chat template teaches: it shows "<tool_call>" (hermes), or it
// speaks of <|python_tag|> / the ipython role (llama3); none otherwise.
ToolCallFormat tool_call_format(std::string_view template_source);
const char* to_string(ToolCallFormat format);

struct ToolCall {
    std::string id;         // "call_" + 24 hex digits
    std::string name;
    std::string arguments;  // a JSON object, serialized (what OpenAI's "arguments" string holds)
};

// "call_" and 24 random hex digits. Thread-safe.
std::string random_tool_call_id();

using ToolCallIds = std::function<std::string()>;

// A piece of a streamed reply: text for delta.content, or a piece of one
// tool call for delta.tool_calls.
struct ReplyDelta {
    bool is_tool_call = false;
    std::string content;  // !is_tool_call
    // is_tool_call: the call's position among this reply's calls; `opens`
    // marks its first piece, which carries id and name (and no arguments);
    // later pieces carry arguments text only.
    int32_t index = 0;
    bool opens = false;
    std::string id;
    std::string name;
    std::string arguments;
};

// Where the object a text opened closes: fed characters one by one, follows
// strings, escapes and nesting. Pure; one per text.
struct JsonDepth {
    int32_t depth = 0;
    bool in_string = false;
    bool escaped = false;
    // Takes `c`; true when it closes the outermost object or array.
    bool take(char c);
};

// Fed the reply's text as it arrives, gives what can be sent now. Text that
// may still turn out to be part of a call (a "<tool_call" cut short, or a
// llama3 reply that opens with "{") is held until it is decided.
//
// A call that streams in as `{"name": "f", "arguments": {` (hermes, after
// its tag) or `{"name": "f", "parameters": {` (llama3, maybe after
// <|python_tag|>) is taken as a call as soon as that much has come: its
// opening piece goes out, then its arguments in the pieces the model writes
// them in, as the model wrote them, up to the end of their object. What
// follows is dropped up to the end of the call ("</tool_call>" for hermes,
// the call object's closing brace for llama3); text after that is content.
// From then on the call stands even if the rest goes wrong (a reply cut by
// max_tokens leaves its arguments unfinished): a stream cannot take back
// what it sent. A call in any other shape, or one that arrives whole with
// its end, is checked whole and goes out as two pieces, the opening and the
// arguments, or stays content when it does not parse.
// Whitespace between content and calls is a separator, not content: it is
// dropped when calls were made.
class ToolCallStream {
public:
    explicit ToolCallStream(ToolCallFormat format, ToolCallIds ids = random_tool_call_id);

    std::vector<ReplyDelta> feed(std::string_view text);
    // The reply has ended, with `last` (maybe nothing) after what was fed:
    // everything still held is decided and given.
    std::vector<ReplyDelta> finish(std::string_view last = {});

    int32_t calls() const { return calls_; }

private:
    void process(bool final, std::vector<ReplyDelta>& out);
    void process_hermes(bool final, std::vector<ReplyDelta>& out);
    void process_llama3(bool final, std::vector<ReplyDelta>& out);
    void emit_content(std::string_view text, std::vector<ReplyDelta>& out);
    bool emit_call(std::string_view body, std::vector<ReplyDelta>& out);
    bool start_streaming(std::vector<ReplyDelta>& out, size_t body_at = 0);
    void stream_llama3_call(bool final, std::vector<ReplyDelta>& out);
    bool stream_arguments(size_t close, bool final, std::vector<ReplyDelta>& out);
    void open_call(std::string name, std::vector<ReplyDelta>& out);

    ToolCallFormat format_;
    ToolCallIds ids_;
    std::string pending_;         // text not yet decided
    std::string held_space_;      // trailing whitespace of the content so far
    std::string space_before_;    // whitespace before the open call, given back if it fails
    bool in_call_ = false;        // hermes: inside <tool_call> ... </tool_call>
    bool streaming_ = false;      // the open call is taken and its arguments stream
    bool arguments_done_ = false; // streaming_: their object has closed
    JsonDepth depth_;             // streaming_: where the arguments stand
    JsonDepth call_depth_;        // llama3 streaming_: where the call's own object stands after them
    bool decided_ = false;        // llama3: the reply is known to be plain content
    bool content_sent_ = false;   // some content has gone out
    int32_t calls_ = 0;
};

// A whole reply: its content (empty when there was none besides calls) and
// calls. Arguments written as an object after the name are the model's own
// text of it; others (a quoted object, "parameters") a normalized object.
struct ParsedReply {
    std::string content;
    std::vector<ToolCall> tool_calls;
};

// The same as a stream given all of `text` with its end and the deltas
// joined: calls are checked whole (a stream that took a call as it came
// may differ, see ToolCallStream).
ParsedReply parse_tool_calls(std::string_view text, ToolCallFormat format, ToolCallIds ids = random_tool_call_id);

// What a forced tool call (tool_choice "required" or a named function) is
// constrained to: `prefix`, then JSON matching `schema_json`, then `suffix`.
struct ForcedToolCall {
    std::string schema_json;
    std::string prefix;
    std::string suffix;
};

// A function offered in the request: its name and its JSON Schema text
// (empty: it takes no parameters).
struct ToolSchema {
    std::string name;
    std::string parameters_json;
};

// Named (`only` is set): that function's call; else one of `tools`. The
// arguments key is what `format` writes ("arguments" for hermes,
// "parameters" for llama3). Requires format != none and a non-empty `tools`.
ForcedToolCall forced_tool_call(ToolCallFormat format, const std::vector<ToolSchema>& tools,
                                const std::string* only = nullptr);

}  // namespace tf::http
