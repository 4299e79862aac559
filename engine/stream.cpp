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
    if (spec_.constraint) constraint_ = spec_.constraint->start();
}

void Stream::add_masks(StreamRows& rows, std::vector<TokenId>& draft) const {
    std::unique_ptr<ConstraintState> state = constraint_->clone();
    std::vector<uint64_t> bits;
    for (size_t i = 0;; ++i) {
        state->allowed(bits);
        if (rows.mask_words == 0) rows.mask_words = static_cast<int32_t>(bits.size());
        bits.resize(static_cast<size_t>(rows.mask_words), 0);
        rows.masks.insert(rows.masks.end(), bits.begin(), bits.end());
        if (i == draft.size()) return;
        if (!mask_allows(bits, draft[i]) || !state->advance(draft[i])) {
            draft.resize(i);
            return;
        }
    }
}

int32_t Stream::draft_room() const {
    if (prefilling() || finished()) return 0;
    // The pending token sits at kv_length; drafts follow it. The round lands
    // at most (drafts + 1) tokens, and the reply has this many left.
    const int32_t kv_room = capacity_ - kv_length_ - 1;
    const int32_t reply_room = spec_.max_tokens - static_cast<int32_t>(reply_.size()) - 1;
    return std::max(0, std::min(kv_room, reply_room));
}

StreamRows Stream::next_rows(int32_t prefill_budget, Draft draft) {
    assert(!finished());
    StreamRows out;
    out.kv = kv_;
    out.sampling = spec_.sampling;
    out.logprobs = spec_.logprobs;
    if (prefilling()) {
        const int32_t count = std::min(prefill_budget, prompt_length() - kv_length_);
        for (int32_t i = 0; i < count; ++i) {
            const int32_t position = kv_length_ + i;
            out.rows.push_back({kv_, position, spec_.prompt[position], false, position == prompt_length() - 1 ? 0 : -1});
        }
        out.prefill = true;
        out.samples = kv_length_ + count == prompt_length();
        out.first_position = prompt_length();
        draft_ = Draft{};
        if (constraint_ && out.samples) {
            std::vector<TokenId> none;
            add_masks(out, none);
        }
    } else {
        draft.tokens.resize(std::min<size_t>(draft.tokens.size(), static_cast<size_t>(draft_room())));
        if (constraint_) add_masks(out, draft.tokens);
        if (draft.tokens.empty()) draft.source = DraftSource::none;
        draft_ = std::move(draft);
        out.rows.push_back({kv_, kv_length_, pending_, false, 0});
        for (size_t i = 0; i < draft_.tokens.size(); ++i) {
            out.rows.push_back({kv_, kv_length_ + 1 + static_cast<int32_t>(i), draft_.tokens[i], false, 0});
        }
        out.draft = draft_.tokens;
        out.record_copy = draft_.source == DraftSource::record;
        out.samples = true;
        out.first_position = kv_length_ + 1;
    }
    in_flight_ = out;
    return out;
}

bool Stream::accept(TokenId token, StreamUpdate& update) {
    reply_.push_back(token);
    context_.append(token);
    update.tokens.push_back(token);
    const bool is_stop_token =
        std::find(spec_.stop_tokens.begin(), spec_.stop_tokens.end(), token) != spec_.stop_tokens.end();
    // The masks let only allowed tokens through, so this cannot fail; a
    // complete constrained reply ends here, as if its end token came.
    const bool constraint_done = constraint_ && !is_stop_token && constraint_->advance(token) && constraint_->complete();
    if (decoder_ && !is_stop_token) {
        StopStringMatcher::Result text = stops_.feed(decoder_->push(token));
        update.text += text.emit;
        if (text.stopped) {
            finish_ = FinishReason::stop_string;
            return false;
        }
    }
    if (is_stop_token || constraint_done) {
        finish_ = FinishReason::stop_token;
    } else if (static_cast<int32_t>(reply_.size()) >= spec_.max_tokens) {
        finish_ = FinishReason::length;
    } else if (context_.size() >= capacity_) {
        finish_ = FinishReason::context_full;  // no position left for the next token
    }
    return !finished();
}

std::vector<uint32_t> Stream::record_ids() const {
    const std::vector<TokenId>& tokens = context_.tokens();
    const int32_t end = kv_length_ < prompt_length() ? kv_length_ : context_.size();
    if (end <= resume_point_) return {};
    return std::vector<uint32_t>(tokens.begin() + resume_point_, tokens.begin() + end);
}

void Stream::take_branch(StreamRows rows, Draft draft, StreamId kv) {
    in_flight_ = std::move(rows);
    draft_ = std::move(draft);
    kv_ = kv;
}

void Stream::apply(const Verdict& verdict, StreamUpdate& update) {
    update.request = request_;
    const StreamRows sent = std::move(in_flight_);
    in_flight_ = StreamRows{};
    verified_last_round_ = false;
    if (finished()) {  // cancelled while the round was in flight
        update.finish = finish_;
        return;
    }
    kv_length_ = kv_after(sent, verdict);
    // The other streams' share of the round: all of it, less this stream's
    // decode part (a prompt chunk is not counted in the round's figures).
    const bool decoded = !sent.prefill;
    const int32_t own_rows = decoded ? static_cast<int32_t>(sent.rows.size()) : 0;
    const int32_t own_copy_rows = decoded && sent.record_copy ? static_cast<int32_t>(sent.draft.size()) : 0;
    others_last_round_.rows = std::max(0, verdict.round_rows - own_rows);
    others_last_round_.plain_rows = std::max(0, others_last_round_.rows - (verdict.round_copy_rows - own_copy_rows));
    others_last_round_.plain_streams = std::max(0, verdict.round_plain_parts - (decoded && !sent.record_copy ? 1 : 0));
    if (sent.prefill) {
        if (sent.samples) {
            if (!verdict.logprobs.empty()) update.logprobs.push_back(verdict.logprobs.front());
            accept(verdict.tokens.front(), update);
        }
    } else {
        for (size_t i = 0; i < verdict.tokens.size(); ++i) {
            pending_ = verdict.tokens[i];
            if (!verdict.logprobs.empty()) update.logprobs.push_back(verdict.logprobs[i]);
            if (!accept(verdict.tokens[i], update)) break;
        }
        // Statistics count what the model accepted, even past a stop in this round.
        const auto drafted = static_cast<int32_t>(draft_.tokens.size());
        const int32_t landed = verdict.landed_drafts;
        last_landed_drafts_ = landed;
        last_displaced_landed_ = 0;
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
            // The own draft the copy displaced: its tokens would have landed
            // as far as they agree with what the model sampled.
            const std::vector<TokenId>& own = draft_.displaced;
            const auto agreed =
                std::mismatch(own.begin(), own.end(), verdict.tokens.begin(), verdict.tokens.end()).first - own.begin();
            last_displaced_landed_ = static_cast<int32_t>(agreed);
            if (!own.empty()) own_rate_.record(static_cast<int32_t>(own.size()), last_displaced_landed_);
        }
    }
    if (sent.prefill && sent.samples) pending_ = verdict.tokens.front();
    if (finished() && decoder_) {
        StopStringMatcher::Result tail = stops_.feed(decoder_->flush());
        update.text += tail.emit;
        if (!tail.stopped) update.text += stops_.flush();
        if (tail.stopped) finish_ = FinishReason::stop_string;
    }
    update.finish = finish_;
}

}  // namespace tf::engine
