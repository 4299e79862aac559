#include "bench/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace tf::bench {

namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

std::optional<double> delta(const std::optional<double>& before, const std::optional<double>& after) {
    if (!before || !after) return std::nullopt;
    return *after - *before;
}

// JSON null for NaN or an absent value; whole numbers (counters) as
// integers, others to 4 decimals.
ojson number(double value) {
    if (!std::isfinite(value)) return nullptr;
    if (value == std::floor(value) && std::abs(value) < 9e15) return static_cast<int64_t>(value);
    return std::round(value * 1e4) / 1e4;
}
ojson number(const std::optional<double>& value) { return value ? number(*value) : ojson(nullptr); }

ojson percentiles_json(const Percentiles& p) {
    return {{"median", number(p.median)}, {"p90", number(p.p90)}, {"p99", number(p.p99)}};
}

ojson summary_json(const Summary& s) {
    ojson out;
    out["requests"] = s.requests;
    out["failed"] = s.failed;
    out["duration_s"] = number(s.duration_s);
    out["requests_per_s"] = number(s.requests_per_s);
    out["output_tokens"] = s.output_tokens;
    out["output_tokens_per_s"] = number(s.output_tokens_per_s);
    out["ttft_ms"] = percentiles_json(s.ttft_ms);
    out["itl_ms"] = percentiles_json(s.itl_ms);
    out["tokens_per_chunk"] = number(s.tokens_per_chunk);
    out["exact_tokens"] = s.exact_tokens;
    out["tokens_per_round"] = number(s.tokens_per_round);
    out["rounds"] = number(s.rounds);
    out["copies_offered"] = number(s.copies_offered);
    out["copies_landed"] = number(s.copies_landed);
    out["copy_tokens_drafted"] = number(s.copy_tokens_drafted);
    out["copy_tokens_landed"] = number(s.copy_tokens_landed);
    out["own_draft_tokens_drafted"] = number(s.own_drafted);
    out["own_draft_tokens_landed"] = number(s.own_landed);
    out["recall_state"] = s.recall_state.empty() ? ojson(nullptr) : ojson(s.recall_state);
    return out;
}

// Copies every field of `from` into `into`, in order.
void merge(ojson& into, const ojson& from) {
    for (auto it = from.begin(); it != from.end(); ++it) into[it.key()] = *it;
}

std::string fixed(double value, int digits) {
    if (!std::isfinite(value)) return "n/a";
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
    return buffer;
}
std::string fixed(const std::optional<double>& value, int digits) { return value ? fixed(*value, digits) : "n/a"; }

std::string percentiles_text(const Percentiles& p) {
    return "median " + fixed(p.median, 2) + "  p90 " + fixed(p.p90, 2) + "  p99 " + fixed(p.p99, 2);
}

void summary_text(std::ostringstream& out, const Summary& s, const std::string& indent) {
    out << indent << s.requests << " requests (" << s.failed << " failed) in " << fixed(s.duration_s, 2) << " s: "
        << fixed(s.requests_per_s, 2) << " requests/s, " << fixed(s.output_tokens_per_s, 1) << " output tokens/s ("
        << s.output_tokens << " tokens, " << (s.exact_tokens ? "counted from token ids" : "counted from usage/text")
        << ")\n";
    out << indent << "TTFT ms: " << percentiles_text(s.ttft_ms) << "\n";
    out << indent << "ITL ms per token: " << percentiles_text(s.itl_ms) << "\n";
    out << indent << "tokens per chunk " << fixed(s.tokens_per_chunk, 2) << ", tokens per round "
        << fixed(s.tokens_per_round, 2) << " (" << fixed(s.rounds, 0) << " rounds)\n";
    out << indent << "record copies offered " << fixed(s.copies_offered, 0) << ", landed " << fixed(s.copies_landed, 0)
        << ", copy tokens landed " << fixed(s.copy_tokens_landed, 0) << " of " << fixed(s.copy_tokens_drafted, 0)
        << "; own-context draft tokens landed " << fixed(s.own_landed, 0) << " of " << fixed(s.own_drafted, 0)
        << "; recall " << (s.recall_state.empty() ? "n/a" : s.recall_state) << "\n";
}

}  // namespace

double percentile(std::vector<double> values, double p) {
    if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
    std::sort(values.begin(), values.end());
    const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
    const auto low = static_cast<size_t>(std::floor(rank));
    const size_t high = std::min(low + 1, values.size() - 1);
    const double fraction = rank - static_cast<double>(low);
    return values[low] + (values[high] - values[low]) * fraction;
}

Percentiles percentiles(const std::vector<double>& values) {
    return {percentile(values, 50), percentile(values, 90), percentile(values, 99)};
}

std::optional<double> metric_sum(const std::string& page, const std::string& name) {
    std::optional<double> sum;
    std::istringstream lines(page);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.empty() || line[0] == '#' || line.compare(0, name.size(), name) != 0) continue;
        size_t at = name.size();
        if (at < line.size() && line[at] == '{') {
            at = line.find('}', at);
            if (at == std::string::npos) continue;
            ++at;
        }
        if (at >= line.size() || line[at] != ' ') continue;  // a longer name that starts the same
        char* end = nullptr;
        const double value = std::strtod(line.c_str() + at + 1, &end);
        if (end == line.c_str() + at + 1) continue;
        sum = sum.value_or(0) + value;
    }
    return sum;
}

void read_metrics(ServerCounters& c, const std::string& page) {
    c.rounds = metric_sum(page, "tensorfold_rounds_total");
    c.generation_tokens = metric_sum(page, "tensorfold_generation_tokens_total");
    c.own_drafted = metric_sum(page, "tensorfold_own_draft_tokens_drafted_total");
    c.own_landed = metric_sum(page, "tensorfold_own_draft_tokens_landed_total");
    if (!c.copies_offered) c.copies_offered = metric_sum(page, "tensorfold_recall_copies_offered_total");
    if (!c.copy_tokens_drafted) c.copy_tokens_drafted = metric_sum(page, "tensorfold_recall_copy_tokens_drafted_total");
    if (!c.copy_tokens_landed) c.copy_tokens_landed = metric_sum(page, "tensorfold_recall_copy_tokens_landed_total");
}

void read_recall(ServerCounters& c, const std::string& body) {
    const json report = json::parse(body, nullptr, false);
    if (report.is_discarded() || !report.is_object() || report.value("object", "") != "recall") return;
    c.recall_state = report.value("state", "");
    if (!report.value("enabled", false)) {
        c.copies_offered = c.copies_missed = c.copy_tokens_drafted = c.copy_tokens_landed = 0;
        return;
    }
    auto get = [&](const char* key) -> std::optional<double> {
        auto it = report.find(key);
        return it != report.end() && it->is_number() ? std::optional<double>(it->get<double>()) : std::nullopt;
    };
    c.copies_offered = get("copies_offered");
    c.copy_tokens_drafted = get("tokens_drafted");
    c.copy_tokens_landed = get("tokens_landed");
    c.recall_adds = get("adds");
    if (auto buckets = report.find("buckets"); buckets != report.end() && buckets->is_array()) {
        double missed = 0;
        for (const json& b : *buckets) missed += b.value("copies_missed", 0.0);
        c.copies_missed = missed;
    }
}

Summary summarize(const std::vector<ReplyTrace>& traces, const ServerCounters& before, const ServerCounters& after) {
    Summary s;
    std::vector<double> ttft, itl;
    double first = std::numeric_limits<double>::infinity(), last = -first;
    int64_t chunks = 0;
    s.exact_tokens = !traces.empty();
    for (const ReplyTrace& t : traces) {
        ++s.requests;
        first = std::min(first, t.sent);
        last = std::max(last, t.done);
        if (!t.ok) {
            ++s.failed;
            continue;
        }
        s.output_tokens += t.tokens();
        chunks += static_cast<int64_t>(t.chunk_times.size());
        s.exact_tokens = s.exact_tokens && t.exact && !t.chunk_times.empty();
        if (t.ttft() >= 0) ttft.push_back(t.ttft() * 1000);
        for (double gap : t.itl()) itl.push_back(gap * 1000);
    }
    s.duration_s = s.requests > 0 ? last - first : 0;
    if (s.duration_s > 0) {
        s.requests_per_s = static_cast<double>(s.requests - s.failed) / s.duration_s;
        s.output_tokens_per_s = static_cast<double>(s.output_tokens) / s.duration_s;
    }
    s.ttft_ms = percentiles(ttft);
    s.itl_ms = percentiles(itl);
    s.tokens_per_chunk = chunks > 0 ? static_cast<double>(s.output_tokens) / static_cast<double>(chunks)
                                    : std::numeric_limits<double>::quiet_NaN();
    if (!after.tensorfold()) return s;
    s.rounds = delta(before.rounds, after.rounds);
    if (auto tokens = delta(before.generation_tokens, after.generation_tokens); tokens && s.rounds && *s.rounds > 0) {
        s.tokens_per_round = *tokens / *s.rounds;
    }
    s.own_drafted = delta(before.own_drafted, after.own_drafted);
    s.own_landed = delta(before.own_landed, after.own_landed);
    s.copies_offered = delta(before.copies_offered, after.copies_offered);
    if (auto missed = delta(before.copies_missed, after.copies_missed); missed && s.copies_offered) {
        s.copies_landed = *s.copies_offered - *missed;
    }
    s.copy_tokens_drafted = delta(before.copy_tokens_drafted, after.copy_tokens_drafted);
    s.copy_tokens_landed = delta(before.copy_tokens_landed, after.copy_tokens_landed);
    s.recall_state = after.recall_state;
    return s;
}

std::string replies_jsonl(const std::vector<ReplyTrace>& traces) {
    std::string out;
    for (const ReplyTrace& t : traces) {
        ojson line = {{"workload", t.workload}, {"label", t.label}, {"ok", t.ok}, {"text", t.text}};
        if (t.exact && !t.chunk_times.empty()) line["token_ids"] = t.token_ids;
        out += line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    }
    return out;
}

ReplyBook parse_replies(const std::string& jsonl) {
    ReplyBook book;
    std::istringstream lines(jsonl);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        json entry = json::parse(line, nullptr, false);
        if (entry.is_discarded() || !entry.is_object() || !entry.contains("workload") || !entry.contains("label") ||
            !entry["workload"].is_string() || !entry["label"].is_string()) {
            throw std::runtime_error("line " + std::to_string(number) +
                                     ": expected an object with string fields \"workload\" and \"label\"");
        }
        const std::string workload = entry["workload"].get<std::string>(), label = entry["label"].get<std::string>();
        book[workload][label] = std::move(entry);
    }
    return book;
}

Identity compare_replies(const std::vector<ReplyTrace>& traces, const ReplyBook& reference, const std::string& workload) {
    Identity identity;
    auto book = reference.find(workload);
    if (book == reference.end()) return identity;
    identity.checked = true;
    for (const ReplyTrace& t : traces) {
        auto entry = book->second.find(t.label);
        bool same = t.ok && entry != book->second.end() && entry->second.value("ok", true);
        if (same) {
            const json& ref = entry->second;
            if (t.exact && !t.chunk_times.empty() && ref.contains("token_ids") && ref["token_ids"].is_array()) {
                same = ref["token_ids"] == json(t.token_ids);
            } else {
                same = ref.value("text", std::string()) == t.text;
            }
        }
        if (same) ++identity.matched;
        else identity.mismatched.push_back(t.label);
    }
    return identity;
}

nlohmann::ordered_json report_json(const RunReport& report) {
    ojson out;
    out["url"] = report.url;
    out["server"] = report.server;
    out["mode"] = report.mode;
    out["concurrency"] = report.concurrency > 0 ? ojson(report.concurrency) : ojson(nullptr);
    out["workloads"] = ojson::array();
    for (const WorkloadReport& w : report.workloads) {
        ojson entry;
        entry["name"] = w.name;
        entry["file"] = w.file;
        const ojson all = summary_json(w.all);
        merge(entry, all);
        if (w.identity) {
            entry["identical"] = w.identity->checked ? ojson(w.identity->identical()) : ojson(nullptr);
            entry["replies_matched"] = w.identity->matched;
            entry["replies_mismatched"] = w.identity->mismatched;
        } else {
            entry["identical"] = nullptr;
        }
        entry["waves"] = ojson::array();
        for (const auto& [wave, summary] : w.waves) {
            ojson item = {{"wave", wave}};
            const ojson fields = summary_json(summary);
            merge(item, fields);
            entry["waves"].push_back(std::move(item));
        }
        out["workloads"].push_back(std::move(entry));
    }
    return out;
}

std::string report_text(const RunReport& report) {
    std::ostringstream out;
    out << "bench-serve " << report.url << " (" << report.server << " server), " << report.mode << "\n";
    for (const WorkloadReport& w : report.workloads) {
        out << "\n" << w.name << " (" << w.file << ")\n";
        summary_text(out, w.all, "  ");
        if (w.identity) {
            if (!w.identity->checked) {
                out << "  identical to the reference: n/a (the reference has no workload '" << w.name << "')\n";
            } else {
                out << "  identical to the reference: " << (w.identity->identical() ? "yes" : "NO") << " ("
                    << w.identity->matched << " of " << w.all.requests << " replies match";
                for (size_t i = 0; i < w.identity->mismatched.size() && i < 5; ++i) {
                    out << (i == 0 ? "; differ: " : ", ") << w.identity->mismatched[i];
                }
                if (w.identity->mismatched.size() > 5) out << ", ...";
                out << ")\n";
            }
        }
        for (const auto& [wave, summary] : w.waves) {
            out << "  wave " << wave << ":\n";
            summary_text(out, summary, "    ");
        }
    }
    return out.str();
}

}  // namespace tf::bench
