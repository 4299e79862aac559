#include "actors/stream_actor.h"

#include <memory>

#include "engine/round_driver.h"

namespace tf::actors {

namespace {

struct StreamState {
    StreamOptions options;
    std::shared_ptr<engine::Stream> stream;  // shared only while lent to the lane
    bool cancelled = false;
    bool lent = false;  // the lane runs the stream's rounds (lone-stream driver)
    static inline const char* name = "stream";
};

using Self = stream_actor::stateful_pointer<StreamState>;

void finish(Self self, StreamEvent last) {
    StreamState& s = self->state;
    Release release;
    release.handle = s.options.handle;
    if (s.stream) {
        engine::Stream& stream = *s.stream;
        last.resume_point = stream.resume_point();
        last.counters = stream.counters();
        const auto& tokens = stream.context().tokens();
        release.kept_tokens.assign(tokens.begin(), tokens.begin() + stream.kept_length());
        release.prompt_tokens = stream.prompt_length();
        release.resume_point = stream.resume_point();
        release.generated_tokens = static_cast<int64_t>(stream.reply().size());
        release.counters = stream.counters();
        if (s.options.writer) {
            std::vector<uint32_t> ids = stream.record_ids();
            if (!ids.empty()) self->send(s.options.writer, add_atom::value, std::move(ids));
        }
    }
    self->send(s.options.lane, release_atom::value, std::move(release));
    s.options.on_event(std::move(last));
    self->quit();
}

void send_rows(Self self, engine::Draft draft) {
    StreamState& s = self->state;
    engine::StreamRows rows = s.stream->next_rows(s.options.prefill_chunk, std::move(draft));
    self->send(s.options.lane, rows_atom::value, LaneRows{s.options.handle, std::move(rows)});
}

void cancelled(Self self) {
    if (self->state.stream) self->state.stream->cancel();
    StreamEvent last;
    last.finish = engine::FinishReason::cancelled;
    finish(self, std::move(last));
}

// The next round's draft: own context first, then (if the stream may ask) a
// record copy from a reader, chosen by the offer policy there.
void next_round(Self self) {
    StreamState& s = self->state;
    engine::Stream& stream = *s.stream;
    if (stream.prefilling()) return send_rows(self, engine::Draft{});
    const engine::Drafter& drafter = *s.options.drafter;
    const int32_t room = drafter.start_round(stream);
    engine::Draft own = drafter.own_context_draft(stream, room);
    if (room <= 0 || s.options.readers.empty() || !stream.offer_state().may_ask_record()) {
        return send_rows(self, std::move(own));
    }
    const reader_actor& reader = s.options.readers[s.options.handle % s.options.readers.size()];
    self->request(reader, caf::infinite, draft_atom::value, drafter.copy_query(stream, room))
        .then(
            [self, own](engine::Draft copy) mutable {
                if (self->state.cancelled) return cancelled(self);
                send_rows(self, engine::Drafter::choose(std::move(own), std::move(copy)));
            },
            [self, own](caf::error&) mutable {
                // A reader that failed costs this round its copy, nothing more.
                if (self->state.cancelled) return cancelled(self);
                send_rows(self, std::move(own));
            });
}

// What follows a landed round, here or (for a lent stream) on the lane: the
// event, then the end, a cancel, or the next round. A stream alone on the
// lane lends itself when it is decoding: the lane then runs its rounds.
void after_round(Self self, StreamEvent event, bool alone) {
    StreamState& s = self->state;
    engine::Stream& stream = *s.stream;
    if (stream.finished()) return finish(self, std::move(event));
    if (!event.tokens.empty() || !event.text.empty()) s.options.on_event(std::move(event));
    if (s.cancelled) return cancelled(self);
    if (alone && !stream.prefilling()) {
        LentStream lent;
        lent.handle = s.options.handle;
        lent.stream = s.stream;
        lent.drafter = s.options.drafter;
        lent.writer = s.options.writer;
        s.lent = true;
        self->send(s.options.lane, lend_atom::value, std::move(lent));
        return;
    }
    next_round(self);
}

stream_actor::behavior_type stream_behavior(Self self, StreamOptions options) {
    self->state.options = std::move(options);
    StreamState& s = self->state;
    self->send(s.options.lane, open_atom::value,
               OpenStream{s.options.handle, caf::actor_cast<stream_actor>(self), s.options.request.prompt});
    return {
        [self](opened_atom, int32_t resume_point) {
            StreamState& s = self->state;
            s.stream = std::make_shared<engine::Stream>(s.options.handle, 0, s.options.request, resume_point,
                                                        s.options.context_size,
                                                        s.options.decoders ? s.options.decoders() : nullptr);
            if (s.cancelled) return cancelled(self);
            next_round(self);
        },
        [self](verdict_atom, engine::Verdict& verdict, bool alone) {
            StreamState& s = self->state;
            engine::Stream& stream = *s.stream;
            // Landed as the lane lands a lent stream's rounds (round_driver.h).
            engine::Landing landing = engine::land_verdict(stream, verdict);
            if (landing.copy_verified && s.options.writer) {
                self->send(s.options.writer, outcome_atom::value,
                           CopyOutcome{stream.draft(), stream.last_landed_drafts(), stream.last_displaced_landed()});
            }
            engine::StreamUpdate& update = landing.update;
            after_round(self,
                        StreamEvent{std::move(update.tokens), std::move(update.text), update.finish, 0, {},
                                    std::move(update.logprobs)},
                        alone);
        },
        [self](event_atom, StreamEvent& event) { self->state.options.on_event(std::move(event)); },
        [self](resume_atom, StreamEvent& event) {
            // Back from the lane: `event` is the last round it ran, not yet reported.
            self->state.lent = false;
            after_round(self, std::move(event), false);
        },
        [self](cancel_atom) {
            // Takes effect at the stream's next step: a round in flight lands first.
            self->state.cancelled = true;
            if (self->state.lent) self->send(self->state.options.lane, reclaim_atom::value, self->state.options.handle);
            if (!self->state.stream) {
                // Not opened yet: the lane drops the request when the release arrives.
                StreamEvent last;
                last.finish = engine::FinishReason::cancelled;
                finish(self, std::move(last));
            }
        },
    };
}

}  // namespace

stream_actor spawn_stream(caf::actor_system& system, StreamOptions options) {
    return system.spawn(stream_behavior, std::move(options));
}

}  // namespace tf::actors
