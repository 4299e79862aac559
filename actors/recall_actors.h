// The record's actors. recall_writer is the only actor that adds to the
// record or deletes it (adds and DELETE are ordered by its mailbox);
// recall_reader actors answer copy-window lookups concurrently; the
// supervisor owns the record's lifecycle: it answers GET /v1/recall, routes
// DELETE to the writer, and probes free disk on a timer (writing <->
// paused-disk). A failed chunk unlink leaves the record paused-delete until
// a later DELETE deletes every chunk (recall::Record enforces it).
#pragma once

#include <chrono>

#include "actors/messages.h"
#include "engine/draft_window.h"

namespace tf::actors {

reader_actor spawn_recall_reader(caf::actor_system& system, recall::Record* record, engine::CostCurve cost);
writer_actor spawn_recall_writer(caf::actor_system& system, recall::Record* record);
// `record` may be null (Recall off): reports say so and DELETE is refused.
supervisor_actor spawn_supervisor(caf::actor_system& system, recall::Record* record, writer_actor writer,
                                  std::chrono::milliseconds disk_check_interval);

}  // namespace tf::actors
