#include "bench/bench_stream.h"

#include <nlohmann/json.hpp>

namespace tf::bench {

std::vector<std::string> SseParser::feed(std::string_view bytes) {
    std::vector<std::string> events;
    pending_.append(bytes);
    size_t start = 0;
    for (;;) {
        const size_t newline = pending_.find('\n', start);
        if (newline == std::string::npos) break;
        std::string_view line(pending_.data() + start, newline - start);
        start = newline + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) {  // a blank line ends the event
            if (has_data_) events.push_back(std::move(data_));
            data_.clear();
            has_data_ = false;
            continue;
        }
        if (line.substr(0, 5) != "data:") continue;  // comments (":...") and other fields
        std::string_view value = line.substr(5);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        if (has_data_) data_ += '\n';
        data_.append(value);
        has_data_ = true;
    }
    pending_.erase(0, start);
    return events;
}

int64_t ReplyTrace::tokens() const {
    if (exact && !chunk_tokens.empty()) return static_cast<int64_t>(token_ids.size());
    if (usage_tokens >= 0) return usage_tokens;
    return static_cast<int64_t>(chunk_times.size());
}

std::vector<double> ReplyTrace::itl() const {
    std::vector<double> samples;
    const size_t chunks = chunk_times.size();
    if (chunks < 2) return samples;
    const double average = static_cast<double>(tokens()) / static_cast<double>(chunks);
    for (size_t i = 1; i < chunks; ++i) {
        const double gap = chunk_times[i] - chunk_times[i - 1];
        if (exact) {
            const int64_t n = chunk_tokens[i];
            for (int64_t t = 0; t < n; ++t) samples.push_back(gap / static_cast<double>(n));
        } else {
            // Without ids the tokens of a chunk are unknown: one sample per
            // chunk, its gap shared by the average tokens per chunk.
            samples.push_back(average > 0 ? gap / average : gap);
        }
    }
    return samples;
}

bool take_event(ReplyTrace& trace, const std::string& data, double now) {
    using nlohmann::json;
    if (data == "[DONE]") return false;
    const json chunk = json::parse(data, nullptr, false);
    if (chunk.is_discarded() || !chunk.is_object()) return true;  // not ours to judge; skip it
    if (auto error = chunk.find("error"); error != chunk.end() && !error->is_null()) {
        trace.ok = false;
        trace.error = "error in the stream: " + error->dump();
        return true;
    }
    if (auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
        if (auto n = usage->find("completion_tokens"); n != usage->end() && n->is_number_integer()) {
            trace.usage_tokens = n->get<int64_t>();
        }
    }
    auto choices = chunk.find("choices");
    if (choices == chunk.end() || !choices->is_array()) return true;
    for (const json& choice : *choices) {
        if (!choice.is_object()) continue;
        std::string text;
        if (auto t = choice.find("text"); t != choice.end() && t->is_string()) text = t->get<std::string>();
        if (auto delta = choice.find("delta"); delta != choice.end() && delta->is_object()) {
            if (auto c = delta->find("content"); c != delta->end() && c->is_string()) text = c->get<std::string>();
        }
        std::vector<int32_t> ids;
        bool has_ids = false;
        if (auto t = choice.find("token_ids"); t != choice.end() && t->is_array()) {
            has_ids = true;
            for (const json& id : *t) {
                if (id.is_number_integer()) ids.push_back(id.get<int32_t>());
            }
        }
        if (text.empty() && ids.empty()) continue;  // a role chunk, a finish chunk, an empty delta
        if (trace.first_content < 0) trace.first_content = now;
        trace.chunk_times.push_back(now);
        trace.chunk_tokens.push_back(static_cast<int64_t>(ids.size()));
        trace.text += text;
        if (!has_ids) trace.exact = false;
        trace.token_ids.insert(trace.token_ids.end(), ids.begin(), ids.end());
    }
    return true;
}

}  // namespace tf::bench
