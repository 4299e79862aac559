#include "recall/dedupe.h"

namespace tf::recall {
namespace {

constexpr size_t kSampleStride = kMinHeldRun - Index::kKeyIds;  // 112

}  // namespace

AddPlan plan_add(const Index& index, std::span<const uint32_t> run) {
    AddPlan plan;
    const size_t n = run.size();

    // 1. Held runs, and the regions of new ids between them.
    std::vector<AddPlan::Piece> regions;
    size_t start = 0;  // first id not yet covered by a held run
    size_t window_end = start + Index::kKeyIds - 1;
    while (window_end < n) {
        HeldRun held = index.longest_held_run(run, window_end, start);
        if (held.length() >= kMinHeldRun) {
            if (held.begin > start) regions.push_back({start, held.begin});
            plan.held_ids += held.length();
            start = held.end;
            window_end = start + Index::kKeyIds - 1;
        } else {
            window_end += kSampleStride;
        }
    }
    if (start < n) regions.push_back({start, n});

    for (const AddPlan::Piece& region : regions) {
        // 2. Context from the neighbouring held runs (a region that does not
        // start at 0 follows a held run of 128 or more ids, and one that does
        // not end at n precedes one).
        AddPlan::Piece piece{region.begin > 0 ? region.begin - kContextIds : 0,
                             region.end < n ? region.end + kContextIds : n};
        const size_t new_ids = region.end - region.begin;
        const size_t length = piece.end - piece.begin;
        // 4. Too short to ever be matched and continued.
        if (length < kMinPieceIds) {
            plan.short_ids += new_ids;
            continue;
        }
        // 3. Held whole already.
        std::span<const uint32_t> ids = run.subspan(piece.begin, length);
        HeldRun held = index.longest_held_run(ids, length - 1, 0);
        if (held.begin == 0 && held.end == length) {
            plan.held_ids += new_ids;
            continue;
        }
        plan.pieces.push_back(piece);
    }
    return plan;
}

}  // namespace tf::recall
