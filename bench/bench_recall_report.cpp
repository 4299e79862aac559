// bench-recall-report: folds the bench-serve --json runs of a
// scripts/bench-recall comparison into a Markdown table (with the targets
// met or missed) and an SVG chart. Each run is given as MODE=FILE, MODE
// being the server set-up it measured ("off", "on", "read-only", or
// "llama" and "llama-ngram" for llama-server plain and with ngram-mod).
#include <cstdio>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/recall_report.h"

namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Fold bench-serve --json runs into the Recall comparison table and chart", "bench-recall-report"};
    std::vector<std::string> runs;
    std::string markdown_path, svg_path;
    app.add_option("RUN", runs, "MODE=FILE: a bench-serve --json report measured with the server in MODE")->required();
    app.add_option("--markdown", markdown_path, "Write the table and the targets there (also printed)");
    app.add_option("--svg", svg_path, "Write the chart there");
    CLI11_PARSE(app, argc, argv);

    tf::bench::RecallComparison comparison;
    for (const std::string& run : runs) {
        const size_t eq = run.find('=');
        if (eq == std::string::npos || eq == 0) {
            std::fprintf(stderr, "bench-recall-report: '%s' is not MODE=FILE\n", run.c_str());
            return 2;
        }
        const std::string file = run.substr(eq + 1);
        try {
            const nlohmann::json report = nlohmann::json::parse(read_text(file));
            comparison.add_run(run.substr(0, eq), report);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "bench-recall-report: %s: %s\n", file.c_str(), e.what());
            return 2;
        }
    }
    std::string text = comparison.markdown() + "\nTargets (Recall on against Recall off):\n\n" + comparison.targets();
    const std::string llama = comparison.llama_targets();
    if (!llama.empty()) text += "\nTargets (Recall on against llama-server --spec-type ngram-mod):\n\n" + llama;
    std::fputs(text.c_str(), stdout);
    try {
        if (!markdown_path.empty()) write_text(markdown_path, text);
        if (!svg_path.empty()) write_text(svg_path, comparison.svg());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench-recall-report: %s\n", e.what());
        return 1;
    }
    return 0;
}
