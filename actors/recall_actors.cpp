#include "actors/recall_actors.h"

#include <spdlog/spdlog.h>

#include "engine/drafter.h"

namespace tf::actors {

namespace {

// The self pointer comes first: CAF takes a leading pointer argument for it.
reader_actor::behavior_type reader(reader_actor::pointer, recall::Record* record, engine::CostCurve cost) {
    return {
        [record, cost](draft_atom, DraftQuery& query) { return engine::Drafter::record_draft(*record, cost, query); },
    };
}

// One debug line after each add and erase, once the record's counters
// show it: operators can follow the record, and the end-to-end tests wait
// for these lines instead of polling GET /v1/recall.
void log_record(const recall::Record& record, const char* what) {
    const recall::RecordStats stats = record.stats();
    spdlog::debug("recall: {}; record: {} adds, {} skipped, {} ids", what, stats.adds, stats.adds_skipped, stats.ids);
}

writer_actor::behavior_type writer(writer_actor::pointer, recall::Record* record) {
    return {
        [record](add_atom, std::vector<uint32_t>& ids) {
            record->add(ids);
            log_record(*record, "add");
        },
        [record](outcome_atom, CopyOutcome& outcome) {
            engine::Drafter::record_outcome(*record, outcome.draft, outcome.landed, outcome.own_displaced);
        },
        [record](erase_atom) {
            recall::EraseResult result = record->erase_all();
            log_record(*record, "erase");
            return result;
        },
    };
}

struct SupervisorState {
    recall::Record* record = nullptr;
    writer_actor writer;
    std::chrono::milliseconds interval{0};
    static inline const char* name = "supervisor";
};

supervisor_actor::behavior_type supervisor(supervisor_actor::stateful_pointer<SupervisorState> self,
                                           recall::Record* record, writer_actor writer,
                                           std::chrono::milliseconds interval) {
    self->state.record = record;
    self->state.writer = writer;
    self->state.interval = interval;
    if (record && interval.count() > 0) self->delayed_send(self, interval, tick_atom::value);
    return {
        [self](erase_atom) -> caf::result<recall::EraseResult> {
            if (!self->state.record) {
                recall::EraseResult refused;
                refused.outcome = recall::EraseResult::Outcome::refused;
                refused.message = "Recall is off: this server keeps no record (start it with --recall)";
                return refused;
            }
            return self->delegate(self->state.writer, erase_atom::value);
        },
        [self](report_atom) {
            RecallReport report;
            if (self->state.record) {
                report.enabled = true;
                report.stats = self->state.record->stats();
            }
            return report;
        },
        [self](tick_atom) {
            // Periodic free-space probe: below the 4 GiB floor the record
            // pauses its adds (and resumes once space returns) while requests
            // keep being served (docs/recall.md, "States").
            self->state.record->refresh_disk_state();
            self->delayed_send(self, self->state.interval, tick_atom::value);
        },
    };
}

}  // namespace

reader_actor spawn_recall_reader(caf::actor_system& system, recall::Record* record, engine::CostCurve cost) {
    return system.spawn(reader, record, std::move(cost));
}

writer_actor spawn_recall_writer(caf::actor_system& system, recall::Record* record) {
    return system.spawn(writer, record);
}

supervisor_actor spawn_supervisor(caf::actor_system& system, recall::Record* record, writer_actor writer,
                                  std::chrono::milliseconds disk_check_interval) {
    return system.spawn(supervisor, record, std::move(writer), disk_check_interval);
}

}  // namespace tf::actors
