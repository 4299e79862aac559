// The answers of GET and DELETE /v1/recall, from the record's stats.
//
// The GET report carries the record's state, its disk and memory footprint,
// and the copy counters (offered, drafted, landed) (docs/recall.md,
// "GET /v1/recall"; the DELETE reply in "DELETE").
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "actors/service.h"
#include "http/api_error.h"

namespace tf::http {

// GET /v1/recall's body: state, directory, bytes on disk and in memory,
// chunks, ids, copies offered, their tokens drafted and landed (in all and per
// match bucket 16-31, 32-63, 64+) and the landing rates (landed / drafted;
// null before anything was drafted). Recall off: {"object": "recall",
// "enabled": false, "state": "off"}.
std::string recall_report_json(const actors::RecallReport& report);

// DELETE /v1/recall: the HTTP status of an EraseResult. erased → 200,
// refused (read-only, following, Recall off) → 409, failed → 500.
int erase_status(const recall::EraseResult& result);

// The error a refused or failed DELETE answers; the 500 names the chunk file
// that could not be deleted.
ApiError erase_error(const recall::EraseResult& result);

}  // namespace tf::http
