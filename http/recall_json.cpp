#include "http/recall_json.h"

#include <nlohmann/json.hpp>

namespace tf::http {

namespace {

using json = nlohmann::ordered_json;

// Tokens landed per token drafted; null until a copy was drafted.
json landing_rate(uint64_t landed, uint64_t drafted) {
    return drafted == 0 ? json(nullptr) : json(static_cast<double>(landed) / static_cast<double>(drafted));
}

// One bucket's (or one history's) landing figures, named by `key`: `name`.
json landing_json(const char* key, const char* name, const recall::BucketLanding& landing) {
    return {{key, name},
            {"copies_offered", landing.copies_offered},
            {"copies_missed", landing.copies_missed},
            {"copies_whole", landing.copies_whole},
            {"tokens_drafted", landing.tokens_drafted},
            {"tokens_landed", landing.tokens_landed},
            {"own_tokens_displaced", landing.own_tokens_displaced},
            {"landing_rate", landing_rate(landing.tokens_landed, landing.tokens_drafted)},
            {"landing_probability", landing.landing_probability},
            {"expected_landed", landing.expected_landed}};
}

}  // namespace

std::string recall_report_json(const actors::RecallReport& report) {
    const recall::RecordStats& s = report.stats;
    json body = {{"object", "recall"}, {"enabled", report.enabled}};
    if (!report.enabled) {
        body["state"] = recall::to_string(recall::RecallState::off);
        return body.dump();
    }
    const recall::LandingSnapshot& landing = s.landing;
    json buckets = json::array();
    for (size_t b = 0; b < recall::kMatchBuckets; ++b) {
        json entry = landing_json("match", recall::to_string(static_cast<recall::MatchBucket>(b)), landing.buckets[b]);
        json by_history = json::array();
        for (size_t h = 0; h < recall::kCopyHistories; ++h) {
            by_history.push_back(landing_json("history", recall::to_string(static_cast<recall::CopyHistory>(h)),
                                              landing.by_history[b][h]));
        }
        entry["by_history"] = std::move(by_history);
        buckets.push_back(std::move(entry));
    }
    body["state"] = recall::to_string(s.state);
    body["dir"] = s.dir;
    body["capacity_bytes"] = s.capacity_bytes;
    body["disk_bytes"] = s.disk_bytes;
    body["memory_bytes"] = s.memory_bytes;
    body["chunk_memory_bytes"] = s.chunk_memory_bytes;
    body["key_table_bytes"] = s.key_table_bytes;
    body["chunks"] = s.chunks;
    body["ids"] = s.ids;
    body["token_ids"] = s.token_ids;
    body["adds"] = s.adds;
    body["adds_skipped"] = s.adds_skipped;
    body["ids_written"] = s.ids_written;
    body["ids_held"] = s.ids_held;
    body["ids_short"] = s.ids_short;
    body["chunks_evicted"] = s.chunks_evicted;
    body["lookups"] = s.lookups;
    body["lookup_hits"] = s.lookup_hits;
    body["copies_offered"] = landing.copies_offered;
    body["probes_offered"] = landing.probes_offered;
    body["copies_keep_missing"] = landing.copies_keep_missing;
    body["tokens_drafted"] = landing.tokens_drafted;
    body["tokens_landed"] = landing.tokens_landed;
    body["landing_rate"] = landing_rate(landing.tokens_landed, landing.tokens_drafted);
    body["own_tokens_displaced"] = landing.own_tokens_displaced;
    body["copies_same_as_own"] = landing.copies_same_as_own;
    body["buckets"] = std::move(buckets);
    body["last_error"] = s.last_error.empty() ? json(nullptr) : json(s.last_error);
    return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

int erase_status(const recall::EraseResult& result) {
    switch (result.outcome) {
        case recall::EraseResult::Outcome::erased: return 200;
        case recall::EraseResult::Outcome::refused: return 409;
        case recall::EraseResult::Outcome::failed: return 500;
    }
    return 500;
}

ApiError erase_error(const recall::EraseResult& result) {
    const int status = erase_status(result);
    std::string message = result.message;
    if (result.outcome == recall::EraseResult::Outcome::failed && !result.failed_file.empty() &&
        message.find(result.failed_file) == std::string::npos) {
        message = "could not delete chunk file " + result.failed_file + (message.empty() ? "" : ": " + message);
    }
    if (message.empty()) message = status == 409 ? "this server may not delete the record" : "DELETE /v1/recall failed";
    return ApiError(status, message);
}

}  // namespace tf::http
