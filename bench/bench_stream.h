// bench-serve's view of one streamed reply: server-sent events cut out of
// the bytes as they arrive, and the chunks of an OpenAI stream turned into
// timings and tokens. Pure code, no network; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tf::bench {

// Splits a text/event-stream into events. Feed bytes in any pieces; each
// complete event (ended by a blank line) yields its data, the "data:" lines
// joined with '\n'. Comments and other fields are skipped; CRLF is accepted.
class SseParser {
public:
    // Appends `bytes` and returns the data of every event completed by them.
    std::vector<std::string> feed(std::string_view bytes);

private:
    std::string pending_;  // bytes after the last complete line
    std::string data_;     // data lines of the event being read
    bool has_data_ = false;
};

// One request as bench-serve saw it. Times are seconds on the run's clock.
struct ReplyTrace {
    std::string workload;
    std::string label;
    int wave = 0;
    bool ok = false;
    std::string error;          // why it failed (HTTP status and body, or the transport error)
    double sent = 0;            // the request was written
    double first_content = -1;  // the first chunk with content arrived (-1: none)
    double done = 0;            // the stream ended
    // One entry per chunk with content: when it arrived and how many tokens it
    // carried (from "token_ids"; 0 when the server sent none).
    std::vector<double> chunk_times;
    std::vector<int64_t> chunk_tokens;
    std::string text;               // the reply's text, chunks joined
    std::vector<int32_t> token_ids;  // the reply's ids, when every content chunk carried them
    bool exact = true;               // every content chunk carried "token_ids"
    int64_t usage_tokens = -1;       // usage.completion_tokens (-1: not sent)

    // Output tokens: the ids when exact, else the usage count, else the
    // number of content chunks (one token each, the best guess left).
    int64_t tokens() const;
    double ttft() const { return first_content < 0 ? -1 : first_content - sent; }
    // Per-token inter-token latencies: the gap before each content chunk
    // after the first, divided evenly among the tokens that chunk carried
    // (each token gets one sample). Without ids, every chunk is taken to
    // carry tokens() / chunks. The first chunk's tokens belong to the TTFT.
    std::vector<double> itl() const;
};

// Reads one event of an OpenAI stream (completions or chat) into `trace`,
// arrived at time `now`. Returns false on [DONE]. A chunk has content when it
// carries text or a non-empty "token_ids"; the chat role chunk has none.
// An "error" object in the stream marks the trace failed.
bool take_event(ReplyTrace& trace, const std::string& data, double now);

}  // namespace tf::bench
