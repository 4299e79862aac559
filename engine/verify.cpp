#include "engine/verify.h"

#include <cassert>

namespace tf::engine {

Verdict verify(std::span<const float> logits, int32_t vocab, std::span<const model::TokenId> draft,
               const SamplingParams& sampling, int64_t first_position) {
    assert(logits.size() == (draft.size() + 1) * static_cast<size_t>(vocab));
    Verdict verdict;
    for (size_t i = 0; i <= draft.size(); ++i) {
        const model::TokenId token =
            sample(logits.subspan(i * static_cast<size_t>(vocab), static_cast<size_t>(vocab)), sampling,
                   first_position + static_cast<int64_t>(i));
        verdict.tokens.push_back(token);
        if (i == draft.size() || token != draft[i]) break;
        ++verdict.landed_drafts;
    }
    return verdict;
}

}  // namespace tf::engine
