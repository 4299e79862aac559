#include "engine/engine.h"

#include <algorithm>
#include <stdexcept>

namespace tf::engine {

Engine::Engine(model::Backend& backend, CostCurve cost, EngineOptions options, TextDecoderFactory decoders,
               recall::Record* record)
    : backend_(backend),
      record_(record),
      options_(options),
      ctx_size_(options.ctx_size > 0 ? options.ctx_size : backend.config().max_position_embeddings),
      decoders_(std::move(decoders)),
      drafter_(std::move(cost), options.drafter, record),
      lanes_(backend, drafter_, options.lanes),
      prompt_cache_(options.prompt_cache_tokens) {}

Engine::~Engine() {
    for (auto& stream : lanes_.streams()) backend_.close_stream(stream->kv());
    for (StreamId kv : prompt_cache_.clear()) backend_.close_stream(kv);
}

RequestId Engine::submit(GenerationRequest request) {
    check_request(request, backend_.config().vocab_size, ctx_size_, static_cast<bool>(decoders_));
    const RequestId id = next_request_++;
    waiting_.emplace_back(id, std::move(request));
    return id;
}

void Engine::cancel(RequestId request) {
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
        if (it->first == request) {
            waiting_.erase(it);
            return;
        }
    }
    for (auto& stream : lanes_.streams()) {
        if (stream && stream->request() == request) stream->cancel();
    }
}

void Engine::admit() {
    while (!waiting_.empty() && static_cast<int32_t>(lanes_.size()) < options_.max_streams) {
        auto [id, request] = std::move(waiting_.front());
        waiting_.pop_front();
        const StreamId kv = lanes_.new_kv();
        const int32_t capacity = ctx_size_;
        backend_.open_stream(kv, capacity);
        std::vector<RunningStream> running;
        for (const auto& stream : lanes_.streams()) {
            if (stream) running.push_back({stream->kv(), stream->context().tokens()});
        }
        const int32_t resumed = resume_from_cache(backend_, prompt_cache_, kv, request.prompt, running);
        lanes_.add(
            std::make_unique<Stream>(id, kv, std::move(request), resumed, capacity, decoders_ ? decoders_() : nullptr));
    }
}

void Engine::retire(std::unique_ptr<Stream> stream) {
    totals_ += stream->counters();
    if (record_) record_->add(stream->record_ids());
    const int32_t kept = std::min(backend_.stream_length(stream->kv()), stream->kept_length());
    const auto& tokens = stream->context().tokens();
    retire_to_cache(backend_, prompt_cache_, stream->kv(), std::vector<TokenId>(tokens.begin(), tokens.begin() + kept),
                    stream->prompt_length());
}

std::vector<StreamUpdate> Engine::step() {
    admit();
    std::vector<StreamUpdate> updates = lanes_.run_round();
    for (auto& stream : lanes_.take_finished()) {
        if (stream->finish_reason() == FinishReason::cancelled) {
            StreamUpdate update;
            update.request = stream->request();
            update.finish = FinishReason::cancelled;
            updates.push_back(std::move(update));
        }
        auto found = completions_.find(stream->request());
        if (found != completions_.end()) {
            found->second.resume_point = stream->resume_point();
            found->second.counters = stream->counters();
        }
        retire(std::move(stream));
    }
    return updates;
}

Completion Engine::generate(GenerationRequest request) {
    const RequestId id = submit(std::move(request));
    completions_[id] = Completion{};
    while (completions_[id].finish == FinishReason::running) {
        for (StreamUpdate& update : step()) {
            auto found = completions_.find(update.request);
            if (found == completions_.end()) continue;
            Completion& c = found->second;
            c.tokens.insert(c.tokens.end(), update.tokens.begin(), update.tokens.end());
            c.text += update.text;
            c.logprobs.insert(c.logprobs.end(), update.logprobs.begin(), update.logprobs.end());
            c.finish = update.finish;
        }
    }
    Completion done = std::move(completions_[id]);
    completions_.erase(id);
    return done;
}

}  // namespace tf::engine
