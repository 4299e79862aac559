#include "engine/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

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

std::optional<ExpertCalibration> expert_calibration(const std::vector<ExpertSample>& samples, int32_t max_rows,
                                                    int32_t num_experts) {
    max_rows = std::max(1, max_rows);
    // One row reads its token's experts whatever the id: its own pair.
    auto paired = [](const ExpertSample& e) { return e.rows == 1 || e.repeated_timed; };
    auto repeated_experts = [](const ExpertSample& e) { return e.rows == 1 ? e.distinct_experts : e.repeated_experts; };
    auto repeated_seconds = [](const ExpertSample& e) { return e.rows == 1 ? e.distinct_seconds : e.repeated_seconds; };
    double added_seconds = 0, added_experts = 0;
    std::vector<CostSample> few_experts, distinct_experts;
    for (const ExpertSample& e : samples) {
        if (e.rows < 1 || e.rows > max_rows) continue;
        distinct_experts.push_back({e.rows, e.distinct_experts});
        if (!paired(e)) continue;
        few_experts.push_back({e.rows, repeated_experts(e)});
        if (e.distinct_experts > repeated_experts(e)) {
            added_seconds += std::max(0.0, e.distinct_seconds - repeated_seconds(e));
            added_experts += e.distinct_experts - repeated_experts(e);
        }
    }
    ExpertCalibration out;
    out.seconds_per_expert = added_experts > 0 ? added_seconds / added_experts : 0.0;
    const auto most = static_cast<double>(std::max(1, num_experts));
    // Expert counts behave like costs: more rows never read fewer experts,
    // and m rows read at most what ceil(m / a) forwards of a rows would.
    out.few_experts = interpolate_costs(few_experts, max_rows);
    out.distinct_experts = interpolate_costs(distinct_experts, max_rows);
    if (out.few_experts.empty() || out.distinct_experts.empty()) return std::nullopt;
    for (size_t i = 0; i < out.few_experts.size(); ++i) {
        out.few_experts[i] = std::min(out.few_experts[i], most);
        out.distinct_experts[i] = std::clamp(out.distinct_experts[i], out.few_experts[i], most);
    }
    std::vector<CostSample> few_cost;
    for (const ExpertSample& e : samples) {
        if (e.rows < 1 || e.rows > max_rows) continue;
        const double spared = e.distinct_experts - out.few_experts[static_cast<size_t>(e.rows - 1)];
        few_cost.push_back({e.rows, paired(e) ? repeated_seconds(e)
                                              : e.distinct_seconds - out.seconds_per_expert * std::max(0.0, spared)});
    }
    out.few_cost = interpolate_costs(few_cost, max_rows);
    if (out.few_cost.empty()) return std::nullopt;
    return out;
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
    // M = 16 when it was timed both ways (issue 38 reports a verify round of
    // 16 rows with its experts), else the largest M that was.
    const ExpertSample* widest = nullptr;
    for (const ExpertSample& e : experts) {
        if (e.repeated_timed && !(widest && widest->rows == 16)) widest = &e;
    }
    if (widest) {
        char line[160];
        std::snprintf(line, sizeof line,
                      "; M = %d: %.1f experts a layer with repeated ids, %.1f with distinct ids, %.3f ms an expert",
                      widest->rows, widest->repeated_experts, widest->distinct_experts, seconds_per_expert * 1000);
        text += line;
    }
    if (!repeated_untimed.empty()) text += "; distinct ids only: M = " + list(repeated_untimed);
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
    const bool mixture = config.moe.enabled();
    const int32_t context = std::clamp(options.context, 0, std::max(0, config.max_position_embeddings - max_rows - 1));
    ScratchStream scratch(backend, options.scratch, context + max_rows);

    std::vector<model::Row> rows;
    model::RowOutputs outputs;
    const model::SamplingParams greedy{.temperature = 0.0f};
    // Any valid ids do: cost does not depend on which tokens run. Every timed
    // row samples a token, as a verified draft's rows do. A mixture of
    // experts is the exception: M distinct ids route to about as many
    // experts as M unrelated tokens, and one id repeated at consecutive
    // positions to few more than one token's, so a mixture times both
    // (expert_costs.h).
    double touched = 0;  // experts_touched() of the last timed forward
    auto timed_forward = [&](int32_t m, bool repeated) {
        rows.clear();
        for (int32_t i = 0; i < m; ++i) {
            rows.push_back({options.scratch, context + i, repeated ? 3 % vocab : (i * 17 + 3) % vocab, false, 0});
        }
        const double begin = now();
        backend.forward(rows, {&greedy, 1}, outputs);
        const double took = now() - begin;
        touched = backend.experts_touched();
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
        timed_forward(1, false);
        out.forwards = 0;
    }
    const double budget_start = now();
    out.warmup_seconds = budget_start - start;
    auto fits = [&](double cost) { return now() - budget_start + cost <= options.budget_seconds; };

    std::vector<CostSample> best;   // in plan order
    std::vector<CostSample> fewer;  // a mixture's repeated-id timings, in plan order
    std::vector<ExpertSample> experts;
    for (int32_t m : plan) {
        if (best.size() >= 2) {
            const std::vector<double> line = interpolate_costs(best, m);
            if (!line.empty() && !fits(line.back())) {
                out.untimed.push_back(m);
                continue;  // a smaller row count later in the plan may still fit
            }
        }
        best.push_back({m, timed_forward(m, false)});
        if (!mixture) continue;
        experts.push_back({m, touched, 0, false});
        // One row reads the same experts whatever its id: nothing to compare.
        if (m == 1) continue;
        // The first pair always runs, so that there is a slope per expert.
        if (!fewer.empty() && !fits(best.back().cost)) {
            out.repeated_untimed.push_back(m);
            continue;
        }
        fewer.push_back({m, timed_forward(m, true)});
        experts.back().repeated_experts = touched;
        experts.back().repeated_timed = true;
    }
    // Repeats, smallest row counts first: their timings are the noisiest
    // beside what they measure, and the cheapest to take again.
    struct Timing {
        CostSample* sample;
        bool repeated;
    };
    std::vector<Timing> by_rows;
    for (CostSample& s : best) by_rows.push_back({&s, false});
    for (CostSample& s : fewer) by_rows.push_back({&s, true});
    std::stable_sort(by_rows.begin(), by_rows.end(),
                     [](const Timing& a, const Timing& b) { return a.sample->rows < b.sample->rows; });
    bool skipped_repeat = false;
    for (int32_t round = 1; round < options.repeats; ++round) {
        for (const Timing& t : by_rows) {
            if (!fits(t.sample->cost)) {
                skipped_repeat = true;
                continue;
            }
            t.sample->cost = std::min(t.sample->cost, timed_forward(t.sample->rows, t.repeated));
        }
    }

    out.budget_spent = skipped_repeat || !out.untimed.empty() || !out.repeated_untimed.empty();
    std::sort(out.untimed.begin(), out.untimed.end());
    std::sort(out.repeated_untimed.begin(), out.repeated_untimed.end());
    for (const Timing& t : by_rows) {
        if (!t.repeated) out.measured.push_back(*t.sample);
    }
    out.curve = CostCurve::from_samples(out.measured, max_rows);
    if (mixture) {
        std::sort(fewer.begin(), fewer.end(), [](const CostSample& a, const CostSample& b) { return a.rows < b.rows; });
        std::sort(experts.begin(), experts.end(),
                  [](const ExpertSample& a, const ExpertSample& b) { return a.rows < b.rows; });
        for (ExpertSample& e : experts) {
            for (const CostSample& s : out.measured) e.distinct_seconds = s.rows == e.rows ? s.cost : e.distinct_seconds;
            for (const CostSample& s : fewer) e.repeated_seconds = s.rows == e.rows ? s.cost : e.repeated_seconds;
        }
        out.experts = std::move(experts);
        const std::optional<ExpertCalibration> calibration =
            expert_calibration(out.experts, max_rows, config.moe.num_experts);
        if (calibration) {
            out.seconds_per_expert = calibration->seconds_per_expert;
            out.curve = out.curve.with_experts(std::make_shared<ExpertCosts>(*calibration));
        }
    }
    out.seconds = now() - start;
    return out;
}

}  // namespace tf::engine
