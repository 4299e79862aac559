#include "bench/recall_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

namespace tf::bench {

namespace {

using nlohmann::json;

double number_or(const json& object, const char* key, double fallback) {
    if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return fallback;
    return object[key].get<double>();
}

double percentile(const json& wave, const char* field, const char* which) {
    if (!wave.contains(field) || !wave[field].is_object()) return std::numeric_limits<double>::quiet_NaN();
    return number_or(wave[field], which, std::numeric_limits<double>::quiet_NaN());
}

std::string fixed(double value, int digits) {
    if (!std::isfinite(value)) return "n/a";
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
    return buffer;
}

std::string ratio_text(double value, double base) {
    if (!std::isfinite(value) || !std::isfinite(base) || base <= 0) return "";
    return " (" + fixed(value / base, 2) + "\u00d7)";
}

// The XML text of `s` (workload names come from file names).
std::string escaped(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

// One colour per mode, in the order modes were first seen.
const char* colour(size_t index) {
    static const char* palette[] = {"#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"};
    return palette[index % (sizeof palette / sizeof palette[0])];
}

// A round upper bound for an axis: 1, 2 or 5 times a power of ten.
double axis_top(double largest) {
    if (!(largest > 0)) return 1;
    const double power = std::pow(10.0, std::floor(std::log10(largest)));
    for (double step : {1.0, 2.0, 5.0, 10.0}) {
        if (step * power >= largest) return step * power;
    }
    return 10 * power;
}

// What the chart's legend calls a mode.
std::string legend_label(const std::string& mode) {
    if (mode == "llama") return "llama-server";
    if (mode == "llama-ngram") return "llama-server ngram-mod";
    return "Recall " + mode;
}

struct Target {
    std::string workload;  // empty: every workload
    int concurrency = 0;   // 0: every concurrency
    double at_least = 0;   // the mode's output tokens/s over the base's
    std::string what;
};

// One line per goal: the ratio of `mode`'s tokens/s to `base`'s in every
// cell the goal covers, met when each of them reaches it.
void ratio_targets(std::ostringstream& out, const std::map<CellKey, Cell>& table, const std::vector<Target>& goals,
                   const std::string& mode, const std::string& base) {
    for (const Target& goal : goals) {
        std::string measured;
        bool met = true, any = false;
        for (const auto& [key, cell] : table) {
            if (key.mode != mode || key.workload != goal.workload) continue;
            if (goal.concurrency != 0 && key.concurrency != goal.concurrency) continue;
            auto other = table.find({base, key.concurrency, key.workload});
            if (other == table.end()) continue;
            const double ratio = cell.tokens_per_s / other->second.tokens_per_s;
            any = true;
            met = met && ratio >= goal.at_least;
            measured += (measured.empty() ? "" : ", ") + std::string("c=") + std::to_string(key.concurrency) + " " +
                        fixed(ratio, 2) + "\u00d7";
        }
        out << "- " << goal.what << ": "
            << (!any  ? "not measured"
                : met ? "met"
                      : "**missed**")
            << (measured.empty() ? "" : " (" + measured + ")") << "\n";
    }
}

}  // namespace

double median_of(std::vector<double> values) {
    values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
                 values.end());
    if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void RecallComparison::add_run(const std::string& mode, const json& report) {
    if (!report.is_object() || !report.contains("workloads") || !report["workloads"].is_array()) {
        throw std::runtime_error("not a bench-serve --json report (no \"workloads\" list)");
    }
    if (!report.contains("concurrency") || !report["concurrency"].is_number_integer()) {
        throw std::runtime_error("the report has no \"concurrency\" (runs with --arrivals are not compared)");
    }
    if (std::find(modes_.begin(), modes_.end(), mode) == modes_.end()) modes_.push_back(mode);
    const int concurrency = report["concurrency"].get<int>();
    for (const json& workload : report["workloads"]) {
        if (!workload.contains("name") || !workload["name"].is_string() || !workload.contains("waves") ||
            !workload["waves"].is_array()) {
            throw std::runtime_error("a workload entry lacks \"name\" or \"waves\"");
        }
        // bench-serve lists waves only for workloads with more than one; a
        // one-wave workload's own fields are that wave's.
        const json& wave = workload["waves"].empty() ? workload : workload["waves"].back();
        RunSample sample;
        sample.tokens_per_s = number_or(wave, "output_tokens_per_s", std::numeric_limits<double>::quiet_NaN());
        sample.itl_p50_ms = percentile(wave, "itl_ms", "median");
        sample.itl_p99_ms = percentile(wave, "itl_ms", "p99");
        sample.ttft_p50_ms = percentile(wave, "ttft_ms", "median");
        sample.tokens_per_chunk = number_or(wave, "tokens_per_chunk", std::numeric_limits<double>::quiet_NaN());
        if (wave.contains("copies_landed") && wave["copies_landed"].is_number()) {
            sample.copies_landed = wave["copies_landed"].get<double>();
        }
        sample.failed = static_cast<int>(number_or(workload, "failed", 0));
        if (workload.contains("identical") && workload["identical"].is_boolean()) {
            sample.identical = workload["identical"].get<bool>();
            sample.requests = static_cast<int>(number_or(workload, "requests", 0));
            sample.matched = static_cast<int>(number_or(workload, "replies_matched", 0));
        }
        // Reports from before these fields existed were tensorfold's.
        sample.other_server = report.value("server", std::string("tensorfold")) != "tensorfold";
        sample.by_text = workload.contains("exact_tokens") && workload["exact_tokens"].is_boolean() &&
                         !workload["exact_tokens"].get<bool>();
        samples_[{mode, concurrency, workload["name"].get<std::string>()}].push_back(sample);
    }
}

std::map<CellKey, Cell> RecallComparison::cells() const {
    std::map<CellKey, Cell> out;
    for (const auto& entry : samples_) {
        // Named references, not a structured binding: clang before 16 cannot
        // capture a binding in the lambda below.
        const CellKey& key = entry.first;
        const auto& runs = entry.second;
        Cell cell;
        cell.runs = static_cast<int>(runs.size());
        auto med = [&runs](double RunSample::*field) {
            std::vector<double> values;
            for (const RunSample& s : runs) values.push_back(s.*field);
            return median_of(values);
        };
        cell.tokens_per_s = med(&RunSample::tokens_per_s);
        cell.itl_p50_ms = med(&RunSample::itl_p50_ms);
        cell.itl_p99_ms = med(&RunSample::itl_p99_ms);
        cell.ttft_p50_ms = med(&RunSample::ttft_p50_ms);
        cell.tokens_per_chunk = med(&RunSample::tokens_per_chunk);
        std::vector<double> copies;
        for (const RunSample& s : runs) {
            cell.failed += s.failed;
            if (s.copies_landed) copies.push_back(*s.copies_landed);
            if (s.identical) cell.identical = cell.identical.value_or(true) && *s.identical;
            cell.requests += s.requests;
            cell.matched += s.matched;
            cell.other_server = cell.other_server || s.other_server;
            cell.by_text = cell.by_text || s.by_text;
        }
        if (!copies.empty()) cell.copies_landed = median_of(copies);
        out[key] = cell;
    }
    return out;
}

std::string RecallComparison::markdown() const {
    const std::map<CellKey, Cell> table = cells();
    std::set<std::pair<std::string, int>> rows;  // workload, concurrency
    for (const auto& [key, cell] : table) rows.insert({key.workload, key.concurrency});
    const std::string base = modes_.empty() ? "" : modes_.front();

    std::ostringstream out;
    out << "| workload | conc. |";
    for (const std::string& mode : modes_) out << " " << mode << " tok/s |";
    for (const std::string& mode : modes_) out << " " << mode << " ITL p50 / p99 ms |";
    out << " copies landed |" << " identical |\n|---|---:|";
    for (size_t i = 0; i < 2 * modes_.size(); ++i) out << "---:|";
    out << "---:|:---:|\n";
    for (const auto& row : rows) {
        const std::string& workload = row.first;  // (not a binding: captured below, see cells())
        const int concurrency = row.second;
        auto find = [&](const std::string& mode) -> const Cell* {
            auto it = table.find({mode, concurrency, workload});
            return it == table.end() ? nullptr : &it->second;
        };
        const Cell* reference = find(base);
        out << "| " << workload << " | " << concurrency << " |";
        for (const std::string& mode : modes_) {
            const Cell* cell = find(mode);
            out << " " << (cell ? fixed(cell->tokens_per_s, 0) : "-");
            if (cell && reference && mode != base) out << ratio_text(cell->tokens_per_s, reference->tokens_per_s);
            out << " |";
        }
        for (const std::string& mode : modes_) {
            const Cell* cell = find(mode);
            out << " " << (cell ? fixed(cell->itl_p50_ms, 2) + " / " + fixed(cell->itl_p99_ms, 2) : "-") << " |";
        }
        // Copies per mode that has a record, "-" where it has none.
        std::string copies;
        for (const std::string& mode : modes_) {
            const Cell* cell = find(mode);
            if (!cell || !cell->copies_landed) continue;
            copies += (copies.empty() ? "" : ", ") + mode + " " + fixed(*cell->copies_landed, 0);
        }
        out << " " << (copies.empty() ? "-" : copies) << " |";
        // The verdict on tensorfold's runs, then what other servers matched.
        bool checked = false, identical = true;
        int failed = 0;
        std::string others;
        for (const std::string& mode : modes_) {
            const Cell* cell = find(mode);
            if (!cell) continue;
            if (cell->other_server) {
                others += (others.empty() ? "; " : ", ") + mode + " ";
                others += !cell->identical ? "n/a"
                                           : std::string(cell->by_text ? "text " : "ids ") +
                                                 std::to_string(cell->matched) + "/" + std::to_string(cell->requests);
                if (cell->failed > 0) others += " (" + std::to_string(cell->failed) + " failed)";
                continue;
            }
            failed += cell->failed;
            if (cell->identical) {
                checked = true;
                identical = identical && *cell->identical;
            }
        }
        out << " "
            << (failed > 0  ? std::to_string(failed) + " failed"
                : !checked  ? "n/a"
                : identical ? "yes"
                            : "NO")
            << others << " |\n";
    }
    // Which modes were other servers, and what their matches mean.
    std::string others;
    for (const std::string& mode : modes_) {
        const bool other = std::any_of(table.begin(), table.end(), [&mode](const auto& entry) {
            return entry.first.mode == mode && entry.second.other_server;
        });
        if (!other) continue;
        others += (others.empty() ? "" : ", ") + mode;
        if (mode == "llama") others += " (llama.cpp's llama-server)";
        if (mode == "llama-ngram") others += " (llama-server --spec-type ngram-mod)";
    }
    if (!others.empty()) {
        out << "\nNot tensorfold: " << others
            << ". Their replies are compared with tensorfold's Recall-off reference for information only (other "
               "numerics give other tokens), as text when the server sends no token ids: \"text 14/16\" is 14 "
               "of 16 replies the same text. The identical verdict before them is tensorfold's.\n";
    }
    return out.str();
}

}  // namespace tf::bench

namespace tf::bench {

std::string RecallComparison::targets(const std::string& on, const std::string& off) const {
    const std::map<CellKey, Cell> table = cells();
    const std::vector<Target> goals = {
        {"regenerate", 1, 3.0, "regenerate, concurrency 1: at least 3x"},
        {"regenerate", 16, 2.0, "regenerate, concurrency 16: at least 2x"},
        {"new-session", 1, 1.5, "new session, old code, concurrency 1: at least 1.5x"},
        {"new-session", 4, 1.2, "new session, old code, concurrency 4: at least 1.2x"},
        {"fresh", 0, 1.0, "fresh, every concurrency: at least 1.0x"},
        {"agent-pastes", 0, 1.0, "agent pastes, every concurrency: at least 1.0x"},
    };
    std::ostringstream out;
    ratio_targets(out, table, goals, on, off);
    // Latency: the worst p99 ratio over every workload and concurrency.
    // Identity: tensorfold's runs only (other servers give other tokens).
    double worst = 0;
    std::string worst_at;
    bool identical = true, checked = false, others = false;
    for (const auto& [key, cell] : table) {
        others = others || cell.other_server;
        if (cell.identical && !cell.other_server) {
            checked = true;
            identical = identical && *cell.identical && cell.failed == 0;
        }
        if (key.mode != on) continue;
        auto base = table.find({off, key.concurrency, key.workload});
        if (base == table.end()) continue;
        const double ratio = cell.itl_p99_ms / base->second.itl_p99_ms;
        if (std::isfinite(ratio) && ratio > worst) {
            worst = ratio;
            worst_at = key.workload + " c=" + std::to_string(key.concurrency);
        }
    }
    out << "- p99 inter-token latency with Recall on at most 1.1x Recall off at every concurrency and workload: "
        << (worst_at.empty() ? "not measured"
            : worst <= 1.1   ? "met"
                             : "**missed**");
    if (!worst_at.empty()) out << " (worst " << fixed(worst, 2) << "\u00d7, " << worst_at << ")";
    out << "\n- identical tokens in every run and mode" << (others ? " of tensorfold" : "") << ": "
        << (!checked    ? "not checked"
            : identical ? "met"
                        : "**missed**")
        << "\n";
    return out.str();
}

std::string RecallComparison::llama_targets(const std::string& on, const std::string& llama) const {
    if (std::find(modes_.begin(), modes_.end(), llama) == modes_.end()) return "";
    const std::vector<Target> goals = {
        {"regenerate", 1, 1.5, "regenerate, concurrency 1: at least 1.5x"},
        {"regenerate", 4, 1.5, "regenerate, concurrency 4: at least 1.5x"},
        {"new-session", 1, 1.5, "new session, old code, concurrency 1: at least 1.5x"},
        {"new-session", 4, 1.5, "new session, old code, concurrency 4: at least 1.5x"},
    };
    std::ostringstream out;
    ratio_targets(out, cells(), goals, on, llama);
    return out.str();
}

std::string RecallComparison::svg() const {
    const std::map<CellKey, Cell> table = cells();
    std::vector<std::pair<std::string, int>> groups;
    for (const auto& [key, cell] : table) {
        std::pair<std::string, int> g{key.workload, key.concurrency};
        if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
    }
    std::sort(groups.begin(), groups.end());
    double top_speed = 0, top_latency = 0;
    for (const auto& [key, cell] : table) {
        if (std::isfinite(cell.tokens_per_s)) top_speed = std::max(top_speed, cell.tokens_per_s);
        if (std::isfinite(cell.itl_p99_ms)) top_latency = std::max(top_latency, cell.itl_p99_ms);
    }
    top_speed = axis_top(top_speed);
    top_latency = axis_top(top_latency);

    const double bar = 9, gap = 10, left = 60, chart_h = 220, label_h = 70;
    const double group_w = bar * std::max<size_t>(modes_.size(), 1) + gap;
    // The legend: one swatch per mode, wider steps for long labels.
    std::vector<double> legend_x;
    double legend_end = left;
    for (const std::string& mode : modes_) {
        legend_x.push_back(legend_end);
        legend_end += std::max(110.0, 14 + 6.0 * static_cast<double>(legend_label(mode).size()));
    }
    const double width = std::max(left + group_w * static_cast<double>(groups.size()) + 20, legend_end);
    const double height = 2 * (chart_h + label_h) + 70;
    std::ostringstream out;
    out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << fixed(width, 0) << "\" height=\"" << fixed(height, 0)
        << "\" font-family=\"sans-serif\" font-size=\"10\">\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    for (size_t m = 0; m < modes_.size(); ++m) {
        const double x = legend_x[m];
        out << "<rect x=\"" << fixed(x, 0) << "\" y=\"8\" width=\"10\" height=\"10\" fill=\"" << colour(m)
            << "\"/><text x=\"" << fixed(x + 14, 0) << "\" y=\"17\">" << escaped(legend_label(modes_[m]))
            << "</text>\n";
    }
    auto chart = [&](double y0, const std::string& title, double top, bool latency) {
        const double base_y = y0 + chart_h;
        out << "<text x=\"" << fixed(left, 0) << "\" y=\"" << fixed(y0 - 6, 0) << "\" font-size=\"12\">"
            << escaped(title) << "</text>\n";
        for (int tick = 0; tick <= 4; ++tick) {
            const double y = base_y - chart_h * tick / 4.0;
            out << "<line x1=\"" << fixed(left, 0) << "\" x2=\"" << fixed(width - 20, 0) << "\" y1=\"" << fixed(y, 1)
                << "\" y2=\"" << fixed(y, 1) << "\" stroke=\"#ddd\"/><text x=\"" << fixed(left - 4, 0) << "\" y=\""
                << fixed(y + 3, 1) << "\" text-anchor=\"end\">" << fixed(top * tick / 4.0, top >= 20 ? 0 : 1)
                << "</text>\n";
        }
        for (size_t g = 0; g < groups.size(); ++g) {
            const double gx = left + group_w * static_cast<double>(g) + gap / 2;
            for (size_t m = 0; m < modes_.size(); ++m) {
                auto it = table.find({modes_[m], groups[g].second, groups[g].first});
                if (it == table.end()) continue;
                const double value = latency ? it->second.itl_p99_ms : it->second.tokens_per_s;
                if (!std::isfinite(value)) continue;
                const double h = chart_h * std::min(value / top, 1.0);
                const double x = gx + bar * static_cast<double>(m);
                out << "<rect x=\"" << fixed(x, 1) << "\" y=\"" << fixed(base_y - h, 1) << "\" width=\""
                    << fixed(bar - 1, 0) << "\" height=\"" << fixed(h, 1) << "\" fill=\"" << colour(m)
                    << "\"><title>" << escaped(modes_[m]) << " " << fixed(value, 2) << "</title></rect>\n";
                if (latency && std::isfinite(it->second.itl_p50_ms)) {
                    // The median as a black tick across its p99 bar.
                    const double y = base_y - chart_h * std::min(it->second.itl_p50_ms / top, 1.0);
                    out << "<line x1=\"" << fixed(x, 1) << "\" x2=\"" << fixed(x + bar - 1, 1) << "\" y1=\""
                        << fixed(y, 1) << "\" y2=\"" << fixed(y, 1) << "\" stroke=\"black\" stroke-width=\"2\"/>\n";
                }
            }
            const double lx = gx + bar * static_cast<double>(modes_.size()) / 2, ly = base_y + 8;
            out << "<text transform=\"translate(" << fixed(lx, 1) << "," << fixed(ly, 1)
                << ") rotate(45)\">" << escaped(groups[g].first) << " c=" << groups[g].second << "</text>\n";
        }
    };
    chart(40, "Output tokens/s (median of runs; measured wave)", top_speed, false);
    chart(40 + chart_h + label_h + 30, "Inter-token latency, ms: bar p99, black tick p50", top_latency, true);
    out << "</svg>\n";
    return out.str();
}

}  // namespace tf::bench
