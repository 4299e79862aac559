// How fast one generation went, split where llama.cpp splits it: the prompt
// (every forward up to and including the one that samples the first reply
// token) and the decode after it. `tensorfold generate --timings` prints it
// in the shape of llama.cpp's timing lines, so a prompt of 512 ids and a
// 129-token reply read like llama-bench's pp512 and tg128.
//
// Pure: the caller reads the clock and passes the times in (seconds).
#pragma once

#include <cstdint>
#include <string>

namespace tf::engine {

class GenerationSpeed {
public:
    explicit GenerationSpeed(double start) : start_(start), prompt_end_(start), end_(start) {}

    // After each engine step: the reply tokens it landed and the time it ended.
    void step(int64_t tokens, double now);

    int64_t reply_tokens() const { return first_tokens_ + decode_tokens_; }
    // Tokens landed after the prompt's round; the first reply token is the
    // prompt's (its logits come from the prompt's last row).
    int64_t decode_tokens() const { return decode_tokens_; }
    double prompt_seconds() const { return prompt_end_ - start_; }
    double decode_seconds() const { return end_ - prompt_end_; }

    // "load time = ...", "prompt eval time = ... ms / N tokens (... ms per
    // token, ... tokens per second)", "eval time = ...", "total time = ...",
    // one a line. `prompt_tokens` are the ones the model read (none came
    // from a cache in `generate`).
    std::string lines(int64_t prompt_tokens, double load_seconds) const;

private:
    double start_;
    double prompt_end_;
    double end_;
    int64_t first_tokens_ = 0;
    int64_t decode_tokens_ = 0;
};

}  // namespace tf::engine
