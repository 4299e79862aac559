#include "actors/actor_service.h"

#include <condition_variable>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "actors/gpu_lane.h"
#include "actors/recall_actors.h"
#include "actors/stream_actor.h"
#include "engine/tokenizer_text.h"

namespace tf::actors {

void LongLivedActors::shutdown() {
    auto exit = [](const auto& actor) {
        if (actor) caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    };
    exit(lane);
    exit(writer);
    for (const auto& reader : readers) exit(reader);
    exit(supervisor);
}

LongLivedActors spawn_long_lived_actors(caf::actor_system& system, const ActorServiceOptions& options,
                                        bool detach_lane) {
    LongLivedActors actors;
    LaneOptions lane;
    lane.backend = options.backend;
    lane.context_size = options.engine.ctx_size > 0 ? options.engine.ctx_size
                                                    : options.backend->config().max_position_embeddings;
    lane.max_streams = options.engine.max_streams;
    lane.prompt_cache_tokens = options.engine.prompt_cache_tokens;
    lane.lone_driver = options.lone_driver;
    lane.experts = options.cost.experts();
    actors.lane = spawn_gpu_lane(system, lane, detach_lane);
    if (options.record) {
        actors.writer = spawn_recall_writer(system, options.record);
        for (int i = 0; i < std::max(1, options.reader_threads); ++i) {
            actors.readers.push_back(spawn_recall_reader(system, options.record, options.cost));
        }
    }
    actors.supervisor = spawn_supervisor(system, options.record, actors.writer, options.disk_check_interval);
    return actors;
}

namespace {

caf::actor_system_config& threaded_config(caf::actor_system_config& config, int threads) {
    config.set("scheduler.max-threads", static_cast<size_t>(std::max(2, threads)));
    // An idle CAF worker polls its queue before it sleeps: sched_yield in a
    // loop, then 50 us sleeps for about 25 ms. The messages of a round keep
    // waking idle workers into that polling, and on a machine with as many
    // cores as compute threads each poll preempts a matmul thread, which
    // stalls the whole forward at its next barrier (15% of a round's time on
    // 2 cores). Without the polling phases an idle worker waits on its
    // condition variable, which a message to it signals.
    config.set("work-stealing.aggressive-poll-attempts", size_t{0});
    config.set("work-stealing.moderate-poll-attempts", size_t{0});
    config.set("logger.file-verbosity", caf::atom("quiet"));
    config.set("logger.console-verbosity", caf::atom("quiet"));
    return config;
}

class ActorService final : public Service {
public:
    explicit ActorService(ActorServiceOptions options)
        : options_(std::move(options)),
          system_(threaded_config(config_, options_.reader_threads + 2)),
          drafter_(options_.cost, options_.engine.drafter, options_.record),
          context_size_(options_.engine.ctx_size > 0 ? options_.engine.ctx_size
                                                     : options_.backend->config().max_position_embeddings),
          actors_(spawn_long_lived_actors(system_, options_, /*detach_lane=*/true)) {
        if (options_.tokenizer) decoders_ = engine::tokenizer_text(*options_.tokenizer);
    }

    ~ActorService() override { shutdown(); }

    RequestHandle submit(engine::GenerationRequest request, EventCallback on_event) override {
        engine::check_request(request, options_.backend->config().vocab_size, context_size_, static_cast<bool>(decoders_));
        RequestHandle handle = 0;
        {
            std::lock_guard lock(mutex_);
            if (stopping_) throw Overloaded("the server is shutting down");
            const auto live = static_cast<int>(streams_.size() - ending_.size());
            if (live >= options_.engine.max_streams + options_.max_waiting) {
                throw Overloaded("every stream is busy and " + std::to_string(options_.max_waiting) +
                                 " requests are already waiting");
            }
            handle = next_handle_++;
            streams_.emplace(handle, stream_actor{});
        }
        auto consumer = std::make_shared<EventCallback>(std::move(on_event));
        StreamOptions stream;
        stream.handle = handle;
        stream.request = std::move(request);
        stream.on_event = [this, handle, consumer](StreamEvent event) {
            if (event.finish == engine::FinishReason::running) return (*consumer)(std::move(event));
            // The request holds no slot while its last event is delivered: a
            // client that sends its next request as soon as it reads the
            // last chunk must not find the server full.
            {
                std::lock_guard lock(mutex_);
                if (streams_.count(handle) != 0) ending_.insert(handle);
            }
            // Forgotten only after the consumer has returned: shutdown() waits
            // for every request to be forgotten, and what the consumer uses
            // (the router, the connection) may go once shutdown() returns.
            try {
                (*consumer)(std::move(event));
            } catch (...) {
                forget(handle);
                throw;
            }
            forget(handle);
        };
        stream.context_size = context_size_;
        stream.prefill_chunk = options_.engine.lanes.prefill_chunk;
        stream.drafter = &drafter_;
        stream.decoders = decoders_;
        stream.lane = actors_.lane;
        stream.readers = actors_.readers;
        stream.writer = actors_.writer;
        stream_actor actor = spawn_stream(system_, std::move(stream));
        // A stream actor that fails never sends its last event: the request
        // still ends, as cancelled, and its slot is freed.
        caf::actor_cast<caf::abstract_actor*>(actor)->attach_functor([this, handle, consumer] {
            if (!forget(handle)) return;
            StreamEvent last;
            last.finish = engine::FinishReason::cancelled;
            try {
                (*consumer)(std::move(last));
            } catch (const std::exception&) {
                // The consumer failed already; nothing is waiting for this event.
            }
        });
        std::lock_guard lock(mutex_);
        if (auto found = streams_.find(handle); found != streams_.end()) found->second = actor;
        return handle;
    }

    void cancel(RequestHandle request) override {
        std::lock_guard lock(mutex_);
        auto found = streams_.find(request);
        if (found != streams_.end() && found->second) caf::anon_send(found->second, cancel_atom::value);
    }

    RecallReport recall_report() override { return ask<RecallReport>(actors_.supervisor, report_atom::value); }

    recall::EraseResult delete_recall() override {
        return ask<recall::EraseResult>(actors_.supervisor, erase_atom::value);
    }

    ServiceMetrics metrics() override { return ask<ServiceMetrics>(actors_.lane, metrics_atom::value); }

    void shutdown() override {
        std::unique_lock lock(mutex_);
        if (stopped_) return;
        stopping_ = true;
        for (auto& [handle, actor] : streams_) {
            if (actor) caf::anon_send(actor, cancel_atom::value);
        }
        idle_.wait_for(lock, std::chrono::seconds(10), [&] { return streams_.empty(); });
        stopped_ = true;
        lock.unlock();
        actors_.shutdown();
    }

private:
    // Removes a request that has ended; false if it was already gone.
    bool forget(RequestHandle handle) {
        std::lock_guard lock(mutex_);
        ending_.erase(handle);
        if (streams_.erase(handle) == 0) return false;
        idle_.notify_all();
        return true;
    }

    template <typename Reply, typename Handle, typename Atom>
    Reply ask(const Handle& actor, Atom atom) {
        caf::scoped_actor self{system_};
        Reply reply{};
        std::string failure;
        self->request(actor, std::chrono::seconds(30), atom)
            .receive([&](Reply& answer) { reply = std::move(answer); },
                     [&](caf::error& error) { failure = system_.render(error); });
        if (!failure.empty()) throw std::runtime_error("actor system: " + failure);
        return reply;
    }

    ActorServiceOptions options_;
    // Before the actor system: stream actors that end while it shuts down
    // still reach these.
    std::mutex mutex_;
    std::condition_variable idle_;
    std::unordered_map<RequestHandle, stream_actor> streams_;  // every request not yet forgotten
    std::unordered_set<RequestHandle> ending_;                 // of which delivering their last event
    caf::actor_system_config config_;
    caf::actor_system system_;
    engine::Drafter drafter_;
    int32_t context_size_;
    engine::TextDecoderFactory decoders_;
    LongLivedActors actors_;
    RequestHandle next_handle_ = 1;
    bool stopping_ = false;
    bool stopped_ = false;
};

}  // namespace

std::unique_ptr<Service> start_actor_service(ActorServiceOptions options) {
    return std::make_unique<ActorService>(std::move(options));
}

}  // namespace tf::actors
