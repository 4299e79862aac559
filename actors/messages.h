// The actors' typed message interfaces. Everything that travels between
// actors is a value defined here; no actor shares mutable state with another
// (the record's own locking lets readers and the writer use one Record).
//
//   stream ──open/rows/release──▶ gpu_lane ──opened/verdict──▶ stream
//   stream ──lend/reclaim───────▶ gpu_lane ──resume──────────▶ stream   (a lone stream)
//   stream ──draft (request)───▶ recall_reader ──Draft──▶ stream
//   stream ──add/outcome───────▶ recall_writer
//   http ──erase/report────────▶ supervisor ──erase (delegated)──▶ recall_writer
#pragma once

#include <caf/all.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "actors/service.h"
#include "engine/drafter.h"
#include "engine/stream.h"
#include "engine/verify.h"
#include "recall/record.h"

namespace tf::actors {

// Atoms (CAF 0.17: at most 10 characters).
using open_atom = caf::atom_constant<caf::atom("open")>;
using opened_atom = caf::atom_constant<caf::atom("opened")>;
using rows_atom = caf::atom_constant<caf::atom("rows")>;
using verdict_atom = caf::atom_constant<caf::atom("verdict")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using draft_atom = caf::atom_constant<caf::atom("draft")>;
using add_atom = caf::atom_constant<caf::atom("add")>;
using outcome_atom = caf::atom_constant<caf::atom("outcome")>;
using erase_atom = caf::atom_constant<caf::atom("erase")>;
using report_atom = caf::atom_constant<caf::atom("report")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using metrics_atom = caf::atom_constant<caf::atom("metrics")>;
using lend_atom = caf::atom_constant<caf::atom("lend")>;
using reclaim_atom = caf::atom_constant<caf::atom("reclaim")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using event_atom = caf::atom_constant<caf::atom("event")>;

// A verdict's flag `alone` says the stream was the lane's only one: it may
// lend itself to the lane (LentStream) instead of sending its next rows.
// While lent, the lane sends each round's update as an `event` for the
// actor to report (one-way: the lane does not wait for it). `resume` hands
// the stream back with the last round's update, applied but not reported.
using stream_actor = caf::typed_actor<caf::reacts_to<opened_atom, int32_t>,                  // resume point
                                      caf::reacts_to<verdict_atom, engine::Verdict, bool>,  // landed; alone
                                      caf::reacts_to<event_atom, StreamEvent>,
                                      caf::reacts_to<resume_atom, StreamEvent>,
                                      caf::reacts_to<cancel_atom>>;

// A stream asks for a KV cache (and the prompt cache's resume point).
struct OpenStream {
    uint64_t handle = 0;
    stream_actor stream;
    std::vector<model::TokenId> prompt;
};

// A stream's rows for the next round.
struct LaneRows {
    uint64_t handle = 0;
    engine::StreamRows rows;
};

// A stream has ended: its KV (the first kept_tokens.size() positions) goes to
// the prompt cache; its numbers go to the lane's metrics.
struct Release {
    uint64_t handle = 0;
    std::vector<model::TokenId> kept_tokens;
    int64_t prompt_tokens = 0;
    int64_t resume_point = 0;
    int64_t generated_tokens = 0;
    engine::DraftCounters counters;
};

// A record lookup for a stream's copy window (runs Drafter::record_draft).
using DraftQuery = engine::CopyQuery;

// How a record copy landed (Drafter::record_outcome, on the writer).
struct CopyOutcome {
    engine::Draft draft;
    int32_t landed = 0;
    int32_t own_displaced = 0;  // own-draft tokens that would have landed instead
};

using reader_actor = caf::typed_actor<caf::replies_to<draft_atom, DraftQuery>::with<engine::Draft>>;

using writer_actor = caf::typed_actor<caf::reacts_to<add_atom, std::vector<uint32_t>>,
                                      caf::reacts_to<outcome_atom, CopyOutcome>,
                                      caf::replies_to<erase_atom>::with<recall::EraseResult>>;

// The lone-stream driver: a stream alone on the lane lends its state, and
// the lane runs its rounds back to back (drafting, forward, landing, events)
// with no round trip per token, until a second stream arrives, the stream
// ends, or its actor reclaims it (a cancel). Exactly the rounds the stream
// actor would have run, so the same tokens.
struct LentStream {
    uint64_t handle = 0;
    std::shared_ptr<engine::Stream> stream;  // the actor does not touch it until `resume`
    const engine::Drafter* drafter = nullptr;  // its record (null: Recall off) is looked up on the lane
    writer_actor writer;                       // invalid: Recall off
};

using lane_actor = caf::typed_actor<caf::reacts_to<open_atom, OpenStream>, caf::reacts_to<rows_atom, LaneRows>,
                                    caf::reacts_to<release_atom, Release>, caf::reacts_to<lend_atom, LentStream>,
                                    caf::reacts_to<reclaim_atom, uint64_t>, caf::reacts_to<step_atom>,
                                    caf::replies_to<metrics_atom>::with<ServiceMetrics>>;

using supervisor_actor = caf::typed_actor<caf::replies_to<erase_atom>::with<recall::EraseResult>,
                                          caf::replies_to<report_atom>::with<RecallReport>,
                                          caf::reacts_to<tick_atom>>;

}  // namespace tf::actors

// Local messages only (nothing here is serialized or leaves the process:
// seed, "Nothing in the record leaves the machine").
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tf::actors::OpenStream)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tf::actors::LaneRows)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tf::actors::Release)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tf::actors::DraftQuery)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tf::actors::CopyOutcome)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tf::actors::ServiceMetrics)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tf::actors::RecallReport)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tf::actors::LentStream)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tf::actors::StreamEvent)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tf::engine::Verdict)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tf::engine::Draft)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tf::recall::EraseResult)
