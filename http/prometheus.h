// Prometheus text exposition format 0.0.4: families of counters, gauges and
// histograms with labels. Pure; a MetricsText is built per scrape on one
// thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tf::http {

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Histogram {
    std::vector<double> upper_bounds;  // ascending, +Inf implied
    std::vector<uint64_t> counts;      // per bucket (not cumulative), upper_bounds.size() + 1 entries
    double sum = 0;

    explicit Histogram(std::vector<double> bounds);
    void observe(double value);
};

class MetricsText {
public:
    // Each family is declared once with its HELP and TYPE, then its samples.
    void counter(const std::string& name, const std::string& help, double value, const Labels& labels = {});
    void gauge(const std::string& name, const std::string& help, double value, const Labels& labels = {});
    void histogram(const std::string& name, const std::string& help, const Histogram& histogram);

    const std::string& text() const { return text_; }

    static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

private:
    void family(const std::string& name, const std::string& help, const char* type);
    void sample(const std::string& name, const Labels& labels, double value);

    std::string text_;
    std::map<std::string, bool> declared_;
};

}  // namespace tf::http
