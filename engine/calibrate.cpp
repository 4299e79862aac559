#include "engine/calibrate.h"

#include <algorithm>
#include <chrono>

namespace tf::engine {

namespace {

double steady_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The scratch stream leaves the backend even when a forward throws, so a
// failed calibration does not hold a KV cache the server never frees.
class ScratchStream {
public:
    ScratchStream(model::Backend& backend, model::StreamId id, int32_t capacity) : backend_(backend), id_(id) {
        backend_.open_stream(id_, capacity);
    }
    ~ScratchStream() { backend_.close_stream(id_); }
    ScratchStream(const ScratchStream&) = delete;
    ScratchStream& operator=(const ScratchStream&) = delete;

private:
    model::Backend& backend_;
    model::StreamId id_;
};

// The plan: the options' row counts in their order, each once, in 1..max_rows.
std::vector<int32_t> plan_of(const CalibrationOptions& options, int32_t max_rows) {
    std::vector<int32_t> plan;
    for (int32_t m : options.sample_rows.empty() ? default_sample_rows(max_rows) : options.sample_rows) {
        if (m >= 1 && m <= max_rows && std::find(plan.begin(), plan.end(), m) == plan.end()) plan.push_back(m);
    }
    if (plan.empty()) plan.push_back(1);
    return plan;
}

}  // namespace

std::vector<int32_t> default_sample_rows(int32_t max_rows) {
    max_rows = std::max(1, max_rows);
    std::vector<int32_t> rows;
    for (int32_t m = 1; m < max_rows; m *= 4) rows.push_back(m);
    rows.push_back(max_rows);
    for (int32_t m = 2; m < max_rows; m *= 4) rows.push_back(m);
    return rows;
}

std::string Calibration::summary() const {
    auto list = [](const std::vector<int32_t>& rows) {
        std::string text;
        for (size_t i = 0; i < rows.size(); ++i) text += (i ? ", " : "") + std::to_string(rows[i]);
        return text;
    };
    std::vector<int32_t> timed;
    for (const CostSample& s : measured) timed.push_back(s.rows);
    std::string text = "M = " + list(timed) + " timed in " + std::to_string(forwards) + " forwards, " +
                       std::to_string(static_cast<long long>(warmup_seconds * 1000 + 0.5)) + " ms warm-up";
    if (!untimed.empty()) text += "; over budget: M = " + list(untimed);
    return text;
}

Calibration measure_cost_curve(model::Backend& backend, const CalibrationOptions& options) {
    const std::function<double()> now = options.clock ? options.clock : steady_seconds;
    const double start = now();
    Calibration out;
    const int32_t max_rows = std::max(1, options.max_rows);
    const std::vector<int32_t> plan = plan_of(options, max_rows);

    const model::ModelConfig& config = backend.config();
    const int32_t vocab = config.vocab_size;
    const int32_t context = std::clamp(options.context, 0, std::max(0, config.max_position_embeddings - max_rows - 1));
    ScratchStream scratch(backend, options.scratch, context + max_rows);

    std::vector<model::Row> rows;
    model::RowOutputs outputs;
    const model::SamplingParams greedy{.temperature = 0.0f};
    // Any valid ids do: cost does not depend on which tokens run. Every timed
    // row samples a token, as a verified draft's rows do. A mixture of
    // experts is the exception: M distinct ids route to about as many
    // experts as M unrelated tokens, more than a draft's consecutive tokens
    // usually share, so its curve is an upper bound (docs/design.md).
    auto timed_forward = [&](int32_t m) {
        rows.clear();
        for (int32_t i = 0; i < m; ++i) rows.push_back({options.scratch, context + i, (i * 17 + 3) % vocab, false, 0});
        const double begin = now();
        backend.forward(rows, {&greedy, 1}, outputs);
        const double took = now() - begin;
        backend.truncate(options.scratch, context);
        ++out.forwards;
        return took;
    };
    if (context > 0) {
        for (int32_t p = 0; p < context; ++p) {
            rows.push_back({options.scratch, p, (p * 31 + 7) % vocab, false, p == context - 1 ? 0 : -1});
        }
        backend.forward(rows, {&greedy, 1}, outputs);
    } else {  // no room for a prefix: a single row warms up, untimed
        timed_forward(1);
        out.forwards = 0;
    }
    const double budget_start = now();
    out.warmup_seconds = budget_start - start;
    auto fits = [&](double cost) { return now() - budget_start + cost <= options.budget_seconds; };

    std::vector<CostSample> best;  // in plan order
    for (int32_t m : plan) {
        if (best.size() >= 2) {
            const std::vector<double> line = interpolate_costs(best, m);
            if (!line.empty() && !fits(line.back())) {
                out.untimed.push_back(m);
                continue;  // a smaller row count later in the plan may still fit
            }
        }
        best.push_back({m, timed_forward(m)});
    }
    // Repeats, smallest row counts first: their timings are the noisiest
    // beside what they measure, and the cheapest to take again.
    std::vector<CostSample*> by_rows;
    for (CostSample& s : best) by_rows.push_back(&s);
    std::sort(by_rows.begin(), by_rows.end(),
              [](const CostSample* a, const CostSample* b) { return a->rows < b->rows; });
    bool skipped_repeat = false;
    for (int32_t round = 1; round < options.repeats; ++round) {
        for (CostSample* s : by_rows) {
            if (!fits(s->cost)) {
                skipped_repeat = true;
                continue;
            }
            s->cost = std::min(s->cost, timed_forward(s->rows));
        }
    }

    out.budget_spent = skipped_repeat || !out.untimed.empty();
    std::sort(out.untimed.begin(), out.untimed.end());
    for (const CostSample* s : by_rows) out.measured.push_back(*s);
    out.curve = CostCurve::from_samples(out.measured, max_rows);
    out.seconds = now() - start;
    return out;
}

}  // namespace tf::engine
