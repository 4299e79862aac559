#include "http/prometheus.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace tf::http {

namespace {

std::string format_value(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    std::ostringstream out;
    out.precision(17);
    out << value;
    return out.str();
}

std::string escape_label(const std::string& value) {
    std::string out;
    for (char ch : value) {
        if (ch == '\\') out += "\\\\";
        else if (ch == '"') out += "\\\"";
        else if (ch == '\n') out += "\\n";
        else out += ch;
    }
    return out;
}

std::string escape_help(const std::string& help) {
    std::string out;
    for (char ch : help) {
        if (ch == '\\') out += "\\\\";
        else if (ch == '\n') out += "\\n";
        else out += ch;
    }
    return out;
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : upper_bounds(std::move(bounds)), counts(upper_bounds.size() + 1, 0) {}

void Histogram::observe(double value) {
    const auto bucket = std::lower_bound(upper_bounds.begin(), upper_bounds.end(), value) - upper_bounds.begin();
    ++counts[static_cast<size_t>(bucket)];
    sum += value;
}

void MetricsText::family(const std::string& name, const std::string& help, const char* type) {
    if (declared_[name]) return;
    declared_[name] = true;
    text_ += "# HELP " + name + " " + escape_help(help) + "\n# TYPE " + name + " " + type + "\n";
}

void MetricsText::sample(const std::string& name, const Labels& labels, double value) {
    text_ += name;
    if (!labels.empty()) {
        text_ += "{";
        for (size_t i = 0; i < labels.size(); ++i) {
            if (i) text_ += ",";
            text_ += labels[i].first + "=\"" + escape_label(labels[i].second) + "\"";
        }
        text_ += "}";
    }
    text_ += " " + format_value(value) + "\n";
}

void MetricsText::counter(const std::string& name, const std::string& help, double value, const Labels& labels) {
    // Text format 0.0.4 names a counter's family exactly as its samples
    // (http_requests_total); a family named without _total would leave the
    // samples untyped for Prometheus' own parser. Names end in _total.
    const std::string full = name.ends_with("_total") ? name : name + "_total";
    family(full, help, "counter");
    sample(full, labels, value);
}

void MetricsText::gauge(const std::string& name, const std::string& help, double value, const Labels& labels) {
    family(name, help, "gauge");
    sample(name, labels, value);
}

void MetricsText::histogram(const std::string& name, const std::string& help, const Histogram& h) {
    family(name, help, "histogram");
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
        cumulative += h.counts[i];
        sample(name + "_bucket", {{"le", format_value(h.upper_bounds[i])}}, static_cast<double>(cumulative));
    }
    cumulative += h.counts.back();
    sample(name + "_bucket", {{"le", "+Inf"}}, static_cast<double>(cumulative));
    sample(name + "_sum", {}, h.sum);
    sample(name + "_count", {}, static_cast<double>(cumulative));
}

}  // namespace tf::http
