// RecallState: what the record is doing right now. GET /v1/recall and the
// startup line report it by these names.
#pragma once

namespace tf::recall {

enum class RecallState {
    off,            // Recall is off (no --recall flag); no Record exists
    writing,        // this server holds the lock and adds to the record
    read_only,      // --recall-read-only: drafts from the record, adds nothing
    following,      // another server holds the lock: the record as it was at start, adds nothing
    paused_disk,    // under the free-space threshold (4 GiB): adds stop, serving goes on
    paused_delete,  // a chunk file could not be deleted: adds stop until a DELETE deletes every chunk
};

// "off", "writing", "read-only", "following", "paused-disk", "paused-delete".
constexpr const char* to_string(RecallState state) {
    switch (state) {
        case RecallState::off: return "off";
        case RecallState::writing: return "writing";
        case RecallState::read_only: return "read-only";
        case RecallState::following: return "following";
        case RecallState::paused_disk: return "paused-disk";
        case RecallState::paused_delete: return "paused-delete";
    }
    return "unknown";
}

// True in the states whose server owns the record (holds the lock): only they
// may DELETE it. read-only and following refuse DELETE (HTTP 409).
constexpr bool owns_record(RecallState state) {
    return state == RecallState::writing || state == RecallState::paused_disk ||
           state == RecallState::paused_delete;
}

}  // namespace tf::recall
