// Dedupe: which parts of an incoming run of ids the record adds.
//
// Stretches of at least 128 ids that are already in the record are skipped,
// which is why repeating a request adds (almost) nothing the second time
// (docs/recall.md, "On disk", what gets added).
//
// The rule, precisely. For one run r of ids (a request's new prompt part
// followed by its reply):
//  1. Held runs. Scanning r left to right, the 16-id windows ending at
//     r[i+15], r[i+15+112], ... are looked up; around each, the longest
//     stretch of r that the record holds contiguously is measured (back to
//     i, forward to the end of r). A stretch of 128 ids or more is a held run:
//     it is not added, and the scan resumes after it. A stride of 112 =
//     128 - 16 guarantees that every held run of 128 or more ids contains a
//     sampled window, at a cost of one lookup per 112 new ids.
//  2. Pieces. What lies between held runs is added, each as its own segment,
//     together with up to 16 ids of each neighbouring held run (kContextIds),
//     so that a match on the held text still continues into the new text
//     (and the new text's end into the held text after it). These 16 ids are
//     far below 128, so no run of 128 held ids is added again.
//  3. A piece the record already holds whole (found the same way) is not
//     added: this is what makes a repeated request of fewer than 128 ids, or
//     the short new parts between held runs, add nothing the second time.
//  4. A piece of fewer than 17 ids is not added: it holds no 16-id key with an
//     id after it, so no lookup could ever return any of it.
// Lookups walk a bounded chain (Index::kMaxChainSteps), so a held run whose
// every occurrence lies deeper than that in its chains can be added again;
// the most recent occurrence is always found first.
//
// Pure function of the index and the run; no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "recall/index.h"

namespace tf::recall {

inline constexpr size_t kMinHeldRun = 128;     // seed: "Runs of 128 or more ids"
inline constexpr size_t kContextIds = Index::kKeyIds;
inline constexpr size_t kMinPieceIds = Index::kKeyIds + 1;

struct AddPlan {
    struct Piece {
        size_t begin = 0;  // [begin, end) of the run, written as one segment
        size_t end = 0;
    };
    std::vector<Piece> pieces;
    uint64_t held_ids = 0;   // ids of the run not added because the record holds them
    uint64_t short_ids = 0;  // ids of the run not added because their piece is too short to match
};

// The pieces of `run` to add (oldest first); `run` must hold no kSeparator.
AddPlan plan_add(const Index& index, std::span<const uint32_t> run);

}  // namespace tf::recall
