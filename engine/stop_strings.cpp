#include "engine/stop_strings.h"

#include <algorithm>

namespace tf::engine {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) {
    for (std::string& stop : stops) {
        if (!stop.empty()) stops_.push_back(std::move(stop));
    }
}

StopStringMatcher::Result StopStringMatcher::feed(std::string_view text) {
    Result result;
    if (stopped_) return result;
    held_.append(text);
    if (stops_.empty()) {
        result.emit.swap(held_);
        return result;
    }
    size_t first = std::string::npos;
    for (const std::string& stop : stops_) first = std::min(first, held_.find(stop));
    if (first != std::string::npos) {
        result.emit = held_.substr(0, first);
        result.stopped = stopped_ = true;
        held_.clear();
        return result;
    }
    // Hold back the longest tail of the text that begins some stop string.
    size_t keep = 0;
    for (const std::string& stop : stops_) {
        for (size_t length = std::min(stop.size() - 1, held_.size()); length > keep; --length) {
            if (held_.compare(held_.size() - length, length, stop, 0, length) == 0) {
                keep = length;
                break;
            }
        }
    }
    result.emit = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return result;
}

std::string StopStringMatcher::flush() {
    std::string rest;
    rest.swap(held_);
    return stopped_ ? std::string() : rest;
}

}  // namespace tf::engine
