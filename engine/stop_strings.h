// Stop strings on decoded text. The engine's issue: "stop strings (on
// decoded text, not split across chunks)": text that might be the start of
// a stop string is held back until the next piece shows whether it is one,
// so no chunk ever carries part of a stop string. Not thread-safe (one per
// stream).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tf::engine {

class StopStringMatcher {
public:
    explicit StopStringMatcher(std::vector<std::string> stops);

    struct Result {
        std::string emit;      // text that is safe to send now
        bool stopped = false;  // a stop string was found; `emit` ends just before it
    };

    // Adds the next piece of decoded reply text.
    Result feed(std::string_view text);

    // At the end of the reply: the text still held back.
    std::string flush();

    bool active() const { return !stops_.empty(); }

private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
};

}  // namespace tf::engine
