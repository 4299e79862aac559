#include "actors/gpu_lane.h"

#include <deque>
#include <map>
#include <optional>

#include "engine/round_driver.h"

namespace tf::actors {

namespace {

struct Slot {
    stream_actor stream;
    model::StreamId kv = 0;
    bool awaiting = false;  // answered (opened or verdict) and not yet heard from
    int32_t prompt_length = 0;  // where a recurrent model's cache entry may resume besides its end
    std::vector<model::TokenId> prompt;  // what a later request may copy from this slot's cache
};

struct LaneState {
    LaneOptions options;
    engine::PromptCache cache{0};
    std::map<uint64_t, Slot> slots;  // ordered: rounds list streams by handle
    std::deque<OpenStream> waiting;
    std::map<uint64_t, engine::StreamRows> pending;
    std::vector<uint64_t> round_handles;  // the streams of the round's parts, in part order
    std::optional<engine::RoundDriver> driver;  // made when the behavior gets the backend
    model::StreamId next_kv = 0;
    std::optional<LentStream> solo;  // a lone stream lent to the lane
    ServiceMetrics metrics;
    static inline const char* name = "gpu_lane";

    // The lane's KV caches (streams and the prompt cache) leave the backend
    // with it: the backend outlives the actor system.
    ~LaneState() {
        if (!options.backend) return;
        for (const auto& [handle, slot] : slots) options.backend->close_stream(slot.kv);
        for (model::StreamId kv : cache.clear()) options.backend->close_stream(kv);
    }
};

using Self = lane_actor::stateful_pointer<LaneState>;

void open_slot(Self self, OpenStream request) {
    LaneState& s = self->state;
    model::Backend& backend = *s.options.backend;
    const model::StreamId kv = s.next_kv++;
    backend.open_stream(kv, s.options.context_size);
    std::vector<engine::RunningStream> running;
    for (const auto& [handle, slot] : s.slots) running.push_back({slot.kv, slot.prompt});
    const int32_t resumed = engine::resume_from_cache(backend, s.cache, kv, request.prompt, running);
    const auto prompt_length = static_cast<int32_t>(request.prompt.size());
    s.slots[request.handle] = Slot{request.stream, kv, true, prompt_length, std::move(request.prompt)};
    self->send(request.stream, opened_atom::value, resumed);
}

void run_round(Self self) {
    LaneState& s = self->state;
    engine::RoundDriver& driver = *s.driver;
    s.round_handles.clear();
    for (auto& [handle, part] : s.pending) {
        // The stream numbered its rows as its own; they run on its slot's cache.
        driver.add(std::move(part), s.slots.at(handle).kv);
        s.round_handles.push_back(handle);
    }
    s.pending.clear();
    const std::vector<engine::Verdict>& verdicts = driver.run();
    const bool alone =
        s.options.lone_driver && s.round_handles.size() == 1 && s.slots.size() == 1 && s.waiting.empty();
    for (size_t part = 0; part < verdicts.size(); ++part) {
        Slot& slot = s.slots.at(s.round_handles[part]);
        slot.awaiting = true;
        self->send(slot.stream, verdict_atom::value, verdicts[part], alone);
    }
}

// A round runs once every stream that was answered has spoken again: the
// round then holds every stream that can take part (continuous batching,
// with new streams joining as they send their first rows).
void maybe_run(Self self) {
    LaneState& s = self->state;
    if (s.pending.empty()) return;
    for (const auto& [handle, slot] : s.slots) {
        if (slot.awaiting) return;
    }
    run_round(self);
}

void close_slot(Self self, uint64_t handle, const std::vector<model::TokenId>* kept_tokens) {
    LaneState& s = self->state;
    auto found = s.slots.find(handle);
    if (found == s.slots.end()) return;
    model::Backend& backend = *s.options.backend;
    const model::StreamId kv = found->second.kv;
    const int32_t prompt_length = found->second.prompt_length;
    self->demonitor(found->second.stream.address());
    if (s.solo && s.solo->handle == handle) s.solo.reset();  // its actor failed while lent
    s.slots.erase(found);
    s.pending.erase(handle);
    if (kept_tokens && !kept_tokens->empty()) {
        engine::retire_to_cache(backend, s.cache, kv, *kept_tokens, prompt_length);
    } else {
        backend.close_stream(kv);
    }
    while (!s.waiting.empty() && static_cast<int32_t>(s.slots.size()) < s.options.max_streams) {
        OpenStream next = std::move(s.waiting.front());
        s.waiting.pop_front();
        open_slot(self, std::move(next));
    }
    maybe_run(self);
}

// The lone-stream path. A lent stream's rounds are the ones its actor would
// have run: the drafting calls it makes, the same RoundDriver over its rows
// alone, the same land_verdict. So its tokens are the same; what it saves is
// the two messages and thread hand-offs a token costs through the actor.

bool alone(const LaneState& s) { return s.slots.size() == 1 && s.waiting.empty(); }

bool lent_here(Self self, uint64_t handle) { return self->state.solo && self->state.solo->handle == handle; }

// Gives the stream back to its actor with the last round's unreported update.
void hand_back(Self self, StreamEvent event) {
    LaneState& s = self->state;
    const uint64_t handle = s.solo->handle;
    s.solo.reset();
    Slot& slot = s.slots.at(handle);
    slot.awaiting = true;  // its next rows come from the actor
    self->send(slot.stream, resume_atom::value, std::move(event));
}

// One round of the lent stream: drafted here (own context, then the record,
// which is thread-safe and shared with the readers), so a lone stream with
// Recall on has no round trip per token either. The next round is a message
// to self: an arriving stream or a reclaim in the mailbox is seen first.
void solo_step(Self self) {
    LaneState& s = self->state;
    if (!s.solo) return;
    if (!alone(s)) return hand_back(self, StreamEvent{});
    const LentStream& solo = *s.solo;
    engine::Stream& stream = *solo.stream;
    const Slot& slot = s.slots.at(solo.handle);
    s.driver->add_decoding(stream, *solo.drafter, slot.kv);
    engine::Landing landing = engine::land_verdict(stream, s.driver->run().front());
    ++s.metrics.lone_rounds_total;
    if (landing.copy_verified && solo.writer) {
        self->send(solo.writer, outcome_atom::value,
                   CopyOutcome{stream.draft(), stream.last_landed_drafts(), stream.last_displaced_landed()});
    }
    engine::StreamUpdate& update = landing.update;
    StreamEvent event{std::move(update.tokens), std::move(update.text), update.finish, 0, {},
                      std::move(update.logprobs)};
    if (stream.finished() || !alone(s)) return hand_back(self, std::move(event));
    if (!event.tokens.empty() || !event.text.empty()) self->send(slot.stream, event_atom::value, std::move(event));
    self->send(self, step_atom::value);
}

lane_actor::behavior_type gpu_lane(Self self, LaneOptions options) {
    self->state.options = options;
    self->state.cache = engine::PromptCache(options.prompt_cache_tokens);
    self->state.driver.emplace(*options.backend, options.experts);
    // A stream actor that fails never sends its rows or its release: drop its
    // slot so the lane and the other streams go on.
    self->set_down_handler([self](caf::down_msg& down) {
        std::erase_if(self->state.waiting,
                      [&](const OpenStream& waiting) { return waiting.stream.address() == down.source; });
        for (const auto& [handle, slot] : self->state.slots) {
            if (slot.stream.address() == down.source) {
                close_slot(self, handle, nullptr);
                return;
            }
        }
    });
    return {
        [self](open_atom, OpenStream& request) {
            self->monitor(request.stream);
            if (static_cast<int32_t>(self->state.slots.size()) < self->state.options.max_streams) {
                open_slot(self, std::move(request));
            } else {
                self->state.waiting.push_back(std::move(request));
            }
        },
        [self](rows_atom, LaneRows& rows) {
            auto found = self->state.slots.find(rows.handle);
            if (found == self->state.slots.end()) return;
            found->second.awaiting = false;
            self->state.pending[rows.handle] = std::move(rows.rows);
            maybe_run(self);
        },
        [self](release_atom, Release& release) {
            ServiceMetrics& m = self->state.metrics;
            ++m.requests_total;
            m.prompt_tokens_total += release.prompt_tokens;
            m.prompt_tokens_computed += release.prompt_tokens - release.resume_point;
            m.generation_tokens_total += release.generated_tokens;
            m.drafts += release.counters;
            // A stream cancelled while it waited for a slot never got one.
            std::erase_if(self->state.waiting, [&](const OpenStream& waiting) { return waiting.handle == release.handle; });
            close_slot(self, release.handle, &release.kept_tokens);
        },
        [self](lend_atom, LentStream& lent) {
            if (!self->state.slots.count(lent.handle)) return;
            self->state.solo = std::move(lent);
            solo_step(self);
        },
        [self](reclaim_atom, uint64_t handle) {
            // The actor got a cancel: it has the stream back before its next round.
            if (lent_here(self, handle)) hand_back(self, StreamEvent{});
        },
        [self](step_atom) { solo_step(self); },
        [self](metrics_atom) {
            ServiceMetrics m = self->state.metrics;
            m.rounds_total = self->state.driver->rounds_run();
            m.requests_running = static_cast<int64_t>(self->state.slots.size());
            m.requests_waiting = static_cast<int64_t>(self->state.waiting.size());
            return m;
        },
    };
}

}  // namespace

lane_actor spawn_gpu_lane(caf::actor_system& system, LaneOptions options, bool detached) {
    // The forward blocks for milliseconds: on its own thread it never holds
    // up the scheduler's workers (the deterministic test scheduler runs it inline).
    if (detached) return system.spawn<caf::detached>(gpu_lane, options);
    return system.spawn(gpu_lane, options);
}

}  // namespace tf::actors
