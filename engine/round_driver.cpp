#include "engine/round_driver.h"

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
    verdicts_.clear();
    sampled_rows_ = 0;
}

size_t RoundDriver::add(StreamRows part, StreamId kv, Stream* stream) {
    start_if_ran();
    part.kv = kv;
    for (model::Row& row : part.rows) row.stream = kv;
    // One sampler per part: a stream's rows all sample with its parameters.
    use_sampler(part, static_cast<int32_t>(samplers_.size()));
    samplers_.push_back(part.sampling);
    first_token_.push_back(sampled_rows_);
    sampled_rows_ += part.sampled_rows();
    rows_.insert(rows_.end(), part.rows.begin(), part.rows.end());
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
    ran_ = true;
    const std::span<const TokenId> tokens(outputs_.tokens);
    verdicts_.clear();
    for (size_t i = 0; i < parts_.size(); ++i) {
        const StreamRows& part = parts_[i];
        verdicts_.push_back(judge(
            part, tokens.subspan(static_cast<size_t>(first_token_[i]), static_cast<size_t>(part.sampled_rows()))));
        // The forward appended every row's K/V; drafts the model did not
        // confirm must not stay as context for the next round.
        const int32_t keep = kv_after(part, verdicts_.back());
        if (backend_.stream_length(part.kv) > keep) backend_.truncate(part.kv, keep);
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
