#include "engine/calibrate.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace tf::engine {

CostCurve measure_cost_curve(model::Backend& backend, int32_t max_rows, int32_t context, int32_t repeats,
                             model::StreamId scratch) {
    const int32_t vocab = backend.config().vocab_size;
    context = std::min(context, std::max(0, backend.config().max_position_embeddings - max_rows - 1));
    backend.open_stream(scratch, context + max_rows);
    std::vector<model::Row> rows;
    std::vector<float> logits;
    // Any valid ids do: cost does not depend on which tokens run.
    for (int32_t p = 0; p < context; ++p) rows.push_back({scratch, p, (p * 31 + 7) % vocab, false});
    if (!rows.empty()) backend.forward(rows, logits);

    std::vector<double> cost;
    for (int32_t m = 1; m <= max_rows; ++m) {
        rows.clear();
        for (int32_t i = 0; i < m; ++i) rows.push_back({scratch, context + i, (i * 17 + 3) % vocab, true});
        double best = std::numeric_limits<double>::max();
        for (int32_t r = 0; r < repeats; ++r) {
            const auto start = std::chrono::steady_clock::now();
            backend.forward(rows, logits);
            const auto stop = std::chrono::steady_clock::now();
            backend.truncate(scratch, context);
            best = std::min(best, std::chrono::duration<double>(stop - start).count());
        }
        cost.push_back(best);
    }
    backend.close_stream(scratch);
    return CostCurve(std::move(cost));
}

}  // namespace tf::engine
