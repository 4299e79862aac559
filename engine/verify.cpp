#include "engine/verify.h"

#include <cassert>

namespace tf::engine {

int32_t StreamRows::logits_rows() const {
    int32_t n = 0;
    for (const model::Row& row : rows) n += row.want_logits ? 1 : 0;
    return n;
}

Verdict verify(std::span<const float> logits, int32_t vocab, std::span<const TokenId> draft,
               const SamplingParams& sampling, int64_t first_position) {
    assert(logits.size() == (draft.size() + 1) * static_cast<size_t>(vocab));
    Verdict verdict;
    for (size_t i = 0; i <= draft.size(); ++i) {
        const TokenId token = sample(logits.subspan(i * static_cast<size_t>(vocab), static_cast<size_t>(vocab)),
                                     sampling, first_position + static_cast<int64_t>(i));
        verdict.tokens.push_back(token);
        if (i == draft.size() || token != draft[i]) break;
        ++verdict.landed_drafts;
    }
    return verdict;
}

Verdict judge(const StreamRows& rows, std::span<const float> logits, int32_t vocab) {
    if (!rows.samples) return {};
    if (rows.prefill) {
        // The last prompt row's logits give the reply's first token.
        return {{sample(logits.first(static_cast<size_t>(vocab)), rows.sampling, rows.first_position)}, 0};
    }
    return verify(logits, vocab, rows.draft, rows.sampling, rows.first_position);
}

int32_t kv_after(const StreamRows& rows, const Verdict& verdict) {
    if (rows.rows.empty()) return 0;
    if (rows.prefill) return rows.rows.back().position + 1;
    return rows.rows.front().position + 1 + verdict.landed_drafts;
}

}  // namespace tf::engine
