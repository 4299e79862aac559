#include "engine/round_driver.h"

#include <algorithm>
#include <cassert>
#include <span>

namespace tf::engine {

void RoundDriver::start_if_ran() {
    if (!ran_) return;
    ran_ = false;
    rows_.clear();
    samplers_.clear();
    parts_.clear();
    streams_.clear();
    first_token_.clear();
    first_logits_.clear();
    verdicts_.clear();
    sampled_rows_ = 0;
    logit_rows_ = 0;
}

size_t RoundDriver::add(StreamRows part, StreamId kv, Stream* stream) {
    start_if_ran();
    part.kv = kv;
    for (model::Row& row : part.rows) row.stream = kv;
    // One sampler per part: a stream's rows all sample with its parameters.
    use_sampler(part, static_cast<int32_t>(samplers_.size()));
    samplers_.push_back(part.sampling);
    first_token_.push_back(sampled_rows_);
    first_logits_.push_back(logit_rows_);
    if (part.host_sampled()) {
        // Its sampling rows bring their logits back and sample nothing on
        // the device; run() samples them (host_sampling.h).
        assert(part.masks.empty() || part.masks.size() == static_cast<size_t>(part.sampled_rows() * part.mask_words));
        for (model::Row row : part.rows) {
            if (row.sampler >= 0) {
                row.want_logits = true;
                row.sampler = -1;
            }
            logit_rows_ += row.want_logits ? 1 : 0;
            rows_.push_back(row);
        }
    } else {
        sampled_rows_ += part.sampled_rows();
        for (const model::Row& row : part.rows) logit_rows_ += row.want_logits ? 1 : 0;
        rows_.insert(rows_.end(), part.rows.begin(), part.rows.end());
    }
    parts_.push_back(std::move(part));
    streams_.push_back(stream);
    return parts_.size() - 1;
}

size_t RoundDriver::add_decoding(Stream& stream, const Drafter& drafter, StreamId kv) {
    assert(!stream.prefilling() && !stream.finished());
    return add(stream.next_rows(0, drafter.next_draft(stream)), kv, &stream);
}

size_t RoundDriver::add_prefill(Stream& stream, int32_t budget, StreamId kv) {
    assert(stream.prefilling() && budget > 0);
    return add(stream.next_rows(budget, Draft{}), kv, &stream);
}

const std::vector<Verdict>& RoundDriver::run() {
    assert(!empty());
    backend_.forward(rows_, samplers_, outputs_);
    ++rounds_run_;
    // Verify rounds are what the copy window prices; a prompt chunk's rows
    // are no draft and may be hundreds.
    if (experts_ && std::none_of(parts_.begin(), parts_.end(), [](const StreamRows& p) { return p.prefill; })) {
        experts_->observe(static_cast<int32_t>(rows_.size()), backend_.experts_touched());
    }
    ran_ = true;
    const std::span<const TokenId> tokens(outputs_.tokens);
    const auto vocab = static_cast<size_t>(backend_.config().vocab_size);
    verdicts_.clear();
    for (size_t i = 0; i < parts_.size(); ++i) {
        const StreamRows& part = parts_[i];
        const auto sampled_rows = static_cast<size_t>(part.sampled_rows());
        // Row j of the part's sampling rows, when its logits came back.
        auto logits = [&](size_t j) {
            return std::span<const float>(outputs_.logits).subspan((static_cast<size_t>(first_logits_[i]) + j) * vocab,
                                                                   vocab);
        };
        if (!part.host_sampled()) {
            verdicts_.push_back(judge(part, tokens.subspan(static_cast<size_t>(first_token_[i]), sampled_rows)));
        } else {
            host_tokens_.clear();
            const auto words = static_cast<size_t>(part.mask_words);
            for (size_t j = 0; j < sampled_rows; ++j) {
                const std::span<const uint64_t> mask =
                    part.masks.empty() ? std::span<const uint64_t>{} : std::span(part.masks).subspan(j * words, words);
                host_tokens_.push_back(
                    sample_row(logits(j), mask, part.sampling, part.first_position + static_cast<int64_t>(j), masked_));
            }
            verdicts_.push_back(judge(part, host_tokens_));
        }
        Verdict& verdict = verdicts_.back();
        if (part.logprobs >= 0) {
            // The verdict's tokens are the ones its first rows sampled.
            for (size_t k = 0; k < verdict.tokens.size(); ++k) {
                verdict.logprobs.push_back(logprob_of(logits(k), verdict.tokens[k], part.logprobs));
            }
        }
        // The forward appended every row's K/V; drafts the model did not
        // confirm must not stay as context for the next round.
        const int32_t keep = kv_after(part, verdict);
        if (backend_.stream_length(part.kv) > keep) backend_.truncate(part.kv, keep);
    }
    // Each stream learns the round's shape from its verdict: it prices its
    // next copy window by the rows the other streams bring (drafter.h).
    int32_t decode_rows = 0, copy_rows = 0, plain_parts = 0;
    for (const StreamRows& part : parts_) {
        if (part.prefill) continue;
        decode_rows += static_cast<int32_t>(part.rows.size());
        if (part.record_copy) {
            copy_rows += static_cast<int32_t>(part.draft.size());
        } else {
            ++plain_parts;
        }
    }
    for (Verdict& verdict : verdicts_) {
        verdict.round_rows = decode_rows;
        verdict.round_copy_rows = copy_rows;
        verdict.round_plain_parts = plain_parts;
    }
    return verdicts_;
}

Landing land_verdict(Stream& stream, const Verdict& verdict) {
    Landing landing;
    stream.apply(verdict, landing.update);
    // Prefill rounds verify no draft: the offer policies learn nothing from them.
    if (stream.verified_last_round()) {
        Drafter::stream_outcome(stream);
        landing.copy_verified = stream.draft().source == DraftSource::record;
    }
    return landing;
}

}  // namespace tf::engine
