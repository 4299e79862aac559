#include "engine/verify.h"

#include <cassert>

namespace tf::engine {

int32_t StreamRows::sampled_rows() const {
    int32_t n = 0;
    for (const model::Row& row : rows) n += row.sampler >= 0 ? 1 : 0;
    return n;
}

Verdict verify(std::span<const TokenId> sampled, std::span<const TokenId> draft) {
    assert(sampled.size() == draft.size() + 1);
    Verdict verdict;
    for (size_t i = 0; i <= draft.size(); ++i) {
        verdict.tokens.push_back(sampled[i]);
        if (i == draft.size() || sampled[i] != draft[i]) break;
        ++verdict.landed_drafts;
    }
    return verdict;
}

Verdict judge(const StreamRows& rows, std::span<const TokenId> sampled) {
    if (!rows.samples) return {};
    // A prefill's last prompt row samples the reply's first token.
    if (rows.prefill) return {{sampled.front()}, 0};
    return verify(sampled, rows.draft);
}

void use_sampler(StreamRows& rows, int32_t index) {
    for (model::Row& row : rows.rows) {
        if (row.sampler >= 0) row.sampler = index;
    }
}

int32_t kv_after(const StreamRows& rows, const Verdict& verdict) {
    if (rows.rows.empty()) return 0;
    if (rows.prefill) return rows.rows.back().position + 1;
    return rows.rows.front().position + 1 + verdict.landed_drafts;
}

}  // namespace tf::engine
