// Drafter: the copy window. Each round it builds a decoding stream's draft:
// first from the stream's own context, then, when the offer policy says a
// record copy is expected to land more, from the record. The draft is as
// long as it pays under the backend's cost curve.
//
// Seed: "The stream's own context is asked first, and wins ties."
//
// Not thread-safe (one per engine thread).
#pragma once

#include "engine/draft_window.h"
#include "engine/stream.h"

namespace tf::engine {

struct DrafterOptions {
    int32_t max_draft = 32;   // longest window, in tokens
    bool own_context = true;  // draft from the stream's own context
};

class Drafter {
public:
    Drafter(CostCurve cost, DrafterOptions options) : cost_(std::move(cost)), options_(options) {}

    Draft next_draft(Stream& stream) const;

    const CostCurve& cost() const { return cost_; }

private:
    Draft own_context_draft(Stream& stream, int32_t room) const;

    CostCurve cost_;
    DrafterOptions options_;
};

}  // namespace tf::engine
