#include "engine/generation_speed.h"

#include <cstdio>

namespace tf::engine {

namespace {

// One timing line: "<label> = <ms> ms / <n> tokens (<ms per token>, <per second>)",
// the parenthesis left out when there is nothing to divide or asked for.
std::string timing_line(const char* label, double seconds, int64_t tokens, bool rates = true) {
    char text[192];
    const double ms = seconds * 1000.0;
    if (rates && tokens > 0 && seconds > 0) {
        std::snprintf(text, sizeof text,
                      "%16s = %10.2f ms / %5lld tokens (%8.2f ms per token, %8.2f tokens per second)\n", label, ms,
                      static_cast<long long>(tokens), ms / static_cast<double>(tokens),
                      static_cast<double>(tokens) / seconds);
    } else {
        std::snprintf(text, sizeof text, "%16s = %10.2f ms / %5lld tokens\n", label, ms,
                      static_cast<long long>(tokens));
    }
    return text;
}

}  // namespace

void GenerationSpeed::step(int64_t tokens, double now) {
    end_ = now;
    if (first_tokens_ == 0) {
        prompt_end_ = now;  // prefill chunks land nothing; the prompt ends where the first token lands
        first_tokens_ = tokens;
    } else {
        decode_tokens_ += tokens;
    }
}

std::string GenerationSpeed::lines(int64_t prompt_tokens, double load_seconds) const {
    char load[96];
    std::snprintf(load, sizeof load, "%16s = %10.2f ms\n", "load time", load_seconds * 1000.0);
    return load + timing_line("prompt eval time", prompt_seconds(), prompt_tokens) +
           timing_line("eval time", decode_seconds(), decode_tokens_) +
           timing_line("total time", end_ - start_, prompt_tokens + reply_tokens(), false);
}

}  // namespace tf::engine
