#include "engine/stream.h"

#include "engine/verify.h"

#include <algorithm>
#include <cassert>

namespace tf::engine {

Stream::Stream(RequestId request, StreamId kv, GenerationRequest spec, int32_t resume_point, int32_t capacity,
               std::unique_ptr<TextDecoder> decoder)
    : request_(request),
      kv_(kv),
      spec_(std::move(spec)),
      resume_point_(resume_point),
      capacity_(capacity),
      kv_length_(resume_point),
      decoder_(std::move(decoder)),
      stops_(spec_.stop_strings) {
    assert(resume_point_ < prompt_length());
    context_.append(spec_.prompt);
}

int32_t Stream::draft_room() const {
    if (prefilling() || finished()) return 0;
    // The pending token sits at kv_length; drafts follow it. The round lands
    // at most (drafts + 1) tokens, and the reply has this many left.
    const int32_t kv_room = capacity_ - kv_length_ - 1;
    const int32_t reply_room = spec_.max_tokens - static_cast<int32_t>(reply_.size()) - 1;
    return std::max(0, std::min(kv_room, reply_room));
}

int32_t Stream::add_rows(std::vector<model::Row>& rows, int32_t prefill_budget, Draft draft) {
    assert(!finished());
    if (prefilling()) {
        const int32_t count = std::min(prefill_budget, prompt_length() - kv_length_);
        for (int32_t i = 0; i < count; ++i) {
            const int32_t position = kv_length_ + i;
            rows.push_back({kv_, position, spec_.prompt[position], position == prompt_length() - 1});
        }
        rows_in_flight_ = count;
        prompt_done_this_round_ = kv_length_ + count == prompt_length();
        draft_ = Draft{};
        return count;
    }
    draft.tokens.resize(std::min<size_t>(draft.tokens.size(), static_cast<size_t>(draft_room())));
    if (draft.tokens.empty()) draft.source = DraftSource::none;
    draft_ = std::move(draft);
    rows.push_back({kv_, kv_length_, pending_, true});
    for (size_t i = 0; i < draft_.tokens.size(); ++i) {
        rows.push_back({kv_, kv_length_ + 1 + static_cast<int32_t>(i), draft_.tokens[i], true});
    }
    rows_in_flight_ = 1 + static_cast<int32_t>(draft_.tokens.size());
    prompt_done_this_round_ = false;
    return rows_in_flight_;
}

bool Stream::accept(TokenId token, StreamUpdate& update) {
    reply_.push_back(token);
    context_.append(token);
    update.tokens.push_back(token);
    const bool is_stop_token =
        std::find(spec_.stop_tokens.begin(), spec_.stop_tokens.end(), token) != spec_.stop_tokens.end();
    if (decoder_ && !is_stop_token) {
        StopStringMatcher::Result text = stops_.feed(decoder_->push(token));
        update.text += text.emit;
        if (text.stopped) {
            finish_ = FinishReason::stop_string;
            return false;
        }
    }
    if (is_stop_token) {
        finish_ = FinishReason::stop_token;
    } else if (static_cast<int32_t>(reply_.size()) >= spec_.max_tokens) {
        finish_ = FinishReason::length;
    } else if (context_.size() >= capacity_) {
        finish_ = FinishReason::context_full;  // no position left for the next token
    }
    return !finished();
}

int32_t Stream::land(std::span<const float> logits, int32_t vocab, StreamUpdate& update) {
    update.request = request_;
    const int32_t rows = rows_in_flight_;
    rows_in_flight_ = 0;
    verified_last_round_ = false;
    if (finished()) {
        // Cancelled while the round was in flight: keep nothing it appended.
        update.finish = finish_;
        return std::min(kv_length_, context_.size());
    }
    if (prefilling()) {
        kv_length_ += rows;
        if (!prompt_done_this_round_) return kv_length_;
        // The last prompt row's logits give the reply's first token.
        pending_ = sample(logits.first(static_cast<size_t>(vocab)), spec_.sampling, prompt_length());
        accept(pending_, update);
    } else {
        const int32_t base = kv_length_;
        const int32_t drafted = static_cast<int32_t>(draft_.tokens.size());
        const Verdict verdict = verify(logits, vocab, draft_.tokens, spec_.sampling, base + 1);
        int32_t landed = 0;
        for (size_t i = 0; i < verdict.tokens.size(); ++i) {
            pending_ = verdict.tokens[i];
            const bool running = accept(pending_, update);
            // A landed draft token is in the KV cache; the round's own token is not yet.
            if (static_cast<int32_t>(i) < verdict.landed_drafts) ++landed;
            if (!running) break;
        }
        kv_length_ = base + 1 + landed;  // the pending token and the drafts that landed
        // Statistics count what the model accepted, even past a stop in this round.
        landed = verdict.landed_drafts;
        last_landed_drafts_ = landed;
        verified_last_round_ = true;
        ++counters_.rounds;
        if (draft_.source == DraftSource::own_context) {
            counters_.own_drafted += drafted;
            counters_.own_landed += landed;
            own_rate_.record(drafted, landed);
        } else if (draft_.source == DraftSource::record) {
            counters_.copies_offered += 1;
            counters_.copy_drafted += drafted;
            counters_.copy_landed += landed;
        }
    }
    if (finished() && decoder_) {
        StopStringMatcher::Result tail = stops_.feed(decoder_->flush());
        update.text += tail.emit;
        if (!tail.stopped) update.text += stops_.flush();
        if (tail.stopped) finish_ = FinishReason::stop_string;
    }
    update.finish = finish_;
    // Positions past the context (a stop inside the landed tokens) leave the cache.
    return std::min(kv_length_, context_.size());
}

}  // namespace tf::engine
