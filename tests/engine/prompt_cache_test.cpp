// The prompt cache's bookkeeping: longest cached prefix (the resume point),
// LRU eviction under a token budget, redundant entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "engine/prompt_cache.h"

namespace tf::engine {
namespace {

std::vector<TokenId> range(TokenId from, TokenId to) {
    std::vector<TokenId> v;
    for (TokenId t = from; t < to; ++t) v.push_back(t);
    return v;
}

bool contains(const std::vector<StreamId>& streams, StreamId s) {
    return std::find(streams.begin(), streams.end(), s) != streams.end();
}

TEST(PromptCache, AByteBudgetKeepsTwiceTheTokensOfAKvTypeHalfTheSize) {
    const uint64_t budget = uint64_t{8} << 30;
    // The Qwen3-0.6B shape: 229,376 bytes a token in f32, 114,688 in f16.
    EXPECT_EQ(PromptCache::tokens_for_bytes(budget, 229376, 2048, 1 << 22, 65536), 37449);
    EXPECT_EQ(PromptCache::tokens_for_bytes(budget, 114688, 2048, 1 << 22, 65536), 74898);
    // Never under one context: a 40k-token conversation resumes whole.
    EXPECT_EQ(PromptCache::tokens_for_bytes(budget, 229376, 40960, 1 << 22, 65536), 40960);
    // Never over the cap, and the fallback when the KV size is unknown.
    EXPECT_EQ(PromptCache::tokens_for_bytes(budget, 64, 2048, 1 << 22, 65536), 1 << 22);
    EXPECT_EQ(PromptCache::tokens_for_bytes(budget, 0, 2048, 1 << 22, 65536), 65536);
}

TEST(PromptCache, EmptyCacheResumesAtZero) {
    PromptCache cache(1000);
    PromptCache::Hit hit = cache.find(range(0, 10));
    EXPECT_EQ(hit.source, -1);
    EXPECT_EQ(hit.length, 0);
}

TEST(PromptCache, ResumesAtTheLongestCommonPrefix) {
    PromptCache cache(1000);
    EXPECT_TRUE(cache.adopt(1, range(0, 20)).empty());
    std::vector<TokenId> prompt = range(0, 12);
    prompt.push_back(500);
    PromptCache::Hit hit = cache.find(prompt);
    EXPECT_EQ(hit.source, 1);
    EXPECT_EQ(hit.length, 12);
}

TEST(PromptCache, TheLastPromptTokenAlwaysRuns) {
    // A prompt the cache holds whole still needs its last token's logits.
    PromptCache cache(1000);
    cache.adopt(1, range(0, 20));
    EXPECT_EQ(cache.find(range(0, 20)).length, 19);
    EXPECT_EQ(cache.find(range(0, 1)).length, 0);
}

TEST(PromptCache, PicksTheEntryWithTheLongestPrefix) {
    PromptCache cache(1000);
    cache.adopt(1, range(0, 5));
    std::vector<TokenId> other = range(0, 8);
    other.push_back(99);
    cache.adopt(2, other);
    std::vector<TokenId> prompt = range(0, 8);
    prompt.push_back(99);
    prompt.push_back(100);
    EXPECT_EQ(cache.find(prompt).source, 2);
    EXPECT_EQ(cache.find(prompt).length, 9);
}

TEST(PromptCache, EvictsTheLeastRecentlyUsedPastItsBudget) {
    PromptCache cache(30);
    cache.adopt(1, range(0, 10));
    cache.adopt(2, range(100, 110));
    cache.adopt(3, range(200, 210));
    cache.find(range(0, 5));  // 1 is now more recent than 2
    std::vector<StreamId> closed = cache.adopt(4, range(300, 310));
    EXPECT_EQ(closed, std::vector<StreamId>{2});
    EXPECT_EQ(cache.cached_tokens(), 30);
    EXPECT_EQ(cache.entries(), 3u);
}

TEST(PromptCache, AnEntryThatExtendsAnotherReplacesIt) {
    PromptCache cache(1000);
    cache.adopt(1, range(0, 10));
    std::vector<StreamId> closed = cache.adopt(2, range(0, 15));
    EXPECT_TRUE(contains(closed, 1));
    EXPECT_EQ(cache.entries(), 1u);
    EXPECT_EQ(cache.cached_tokens(), 15);
}

TEST(PromptCache, AnEntryAnotherAlreadyCoversIsNotKept) {
    PromptCache cache(1000);
    cache.adopt(1, range(0, 15));
    EXPECT_EQ(cache.adopt(2, range(0, 10)), std::vector<StreamId>{2});
    EXPECT_EQ(cache.entries(), 1u);
}

TEST(PromptCache, AStreamLargerThanTheBudgetIsNotKept) {
    PromptCache cache(8);
    EXPECT_EQ(cache.adopt(7, range(0, 9)), std::vector<StreamId>{7});
    EXPECT_EQ(cache.entries(), 0u);
}

TEST(PromptCache, ClearReturnsEveryStream) {
    PromptCache cache(100);
    cache.adopt(1, range(0, 10));
    cache.adopt(2, range(50, 60));
    std::vector<StreamId> closed = cache.clear();
    EXPECT_EQ(closed.size(), 2u);
    EXPECT_EQ(cache.cached_tokens(), 0);
}

// Recurrent models (NemotronH): an entry resumes only at the lengths where
// the backend kept its state.
TEST(PromptCache, AnEntryWithResumePointsResumesAtTheLongestPointWithinThePrefix) {
    PromptCache cache(1000);
    // Prompt 0..9 (state kept at 9, its end less the last token) and reply 10..19.
    EXPECT_TRUE(cache.adopt(1, range(0, 20), {20, 9}).empty());
    std::vector<TokenId> regenerate = range(0, 10);
    EXPECT_EQ(cache.find(regenerate).length, 9);
    std::vector<TokenId> next_turn = range(0, 20);
    next_turn.push_back(700);
    EXPECT_EQ(cache.find(next_turn).length, 20);
    std::vector<TokenId> diverges = range(0, 15);
    diverges.push_back(700);
    EXPECT_EQ(cache.find(diverges).length, 9);  // 15 tokens agree, but no state at 15
    std::vector<TokenId> early = range(0, 5);
    early.push_back(700);
    const PromptCache::Hit none = cache.find(early);
    EXPECT_EQ(none.length, 0);
}

TEST(PromptCache, ALongerEntryReplacesAShorterOneOnlyWhereItResumesToo) {
    PromptCache cache(1000);
    EXPECT_TRUE(cache.adopt(1, range(0, 10), {10}).empty());
    // Covers 0..9 but resumes at 25 and 9 only: both entries stay.
    EXPECT_TRUE(cache.adopt(2, range(0, 25), {25, 9}).empty());
    EXPECT_EQ(cache.entries(), 2u);
    std::vector<TokenId> prompt = range(0, 10);
    prompt.push_back(700);
    EXPECT_EQ(cache.find(prompt).length, 10);
    // An entry resuming everywhere the short one does replaces it.
    const std::vector<StreamId> closed = cache.adopt(3, range(0, 30), {30, 25, 10, 9});
    EXPECT_TRUE(contains(closed, 1));
    EXPECT_TRUE(contains(closed, 2));
}

TEST(PromptCache, ARecurrentStatesWorthIsChargedToTheBudget) {
    PromptCache cache(1000);
    EXPECT_TRUE(cache.adopt(1, range(0, 10), {10}, 600).empty());
    EXPECT_EQ(cache.cached_tokens(), 610);
    // A second entry of the same cost does not fit beside it.
    const std::vector<StreamId> closed = cache.adopt(2, range(100, 110), {10}, 600);
    EXPECT_TRUE(contains(closed, 1));
    EXPECT_EQ(cache.entries(), 1u);
    EXPECT_EQ(cache.cached_tokens(), 610);
}

TEST(PromptCache, StateCostIsTheMambaStatesOverOnePositionsKv) {
    model::ModelConfig c;
    c.hidden_size = 64;
    c.num_layers = 3;
    c.num_kv_heads = 2;
    c.head_dim = 16;
    c.layer_kinds = {model::LayerKind::mamba, model::LayerKind::attention, model::LayerKind::mamba};
    c.mamba.num_heads = 8;
    c.mamba.head_dim = 8;
    c.mamba.state_size = 16;
    // 3 buffers x 2 layers x 1024 floats x 4 bytes over 2 x 2 x 16 x 4 bytes a position.
    EXPECT_EQ(state_cost_tokens(c), 3 * 2 * 1024 * 4 / (2 * 2 * 16 * 4));
}

TEST(PromptCache, ReleaseForgetsAnEntryAndItsTokens) {
    PromptCache cache(1000);
    EXPECT_TRUE(cache.adopt(1, range(0, 20)).empty());
    EXPECT_TRUE(cache.adopt(2, range(100, 130)).empty());
    EXPECT_TRUE(cache.release(1));
    EXPECT_FALSE(cache.release(1));
    EXPECT_EQ(cache.entries(), 1u);
    EXPECT_EQ(cache.cached_tokens(), 30);
    EXPECT_EQ(cache.find(range(0, 10)).source, -1);
}

// Keeps stream lengths and which prefixes were moved or copied; a move
// empties its source, as the CPU backend's does.
class LengthsBackend : public model::Backend {
public:
    const model::ModelConfig& config() const override { return config_; }
    void open_stream(StreamId kv, int32_t) override { lengths[kv] = 0; }
    void close_stream(StreamId kv) override { lengths.erase(kv); }
    int32_t stream_length(StreamId kv) const override { return lengths.at(kv); }
    void truncate(StreamId kv, int32_t length) override { lengths.at(kv) = std::min(lengths.at(kv), length); }
    void copy_prefix(StreamId, StreamId to, int32_t length) override {
        lengths.at(to) = length;
        ++copies;
    }
    bool move_prefix(StreamId from, StreamId to, int32_t length) override {
        lengths.at(to) = length;
        lengths.at(from) = 0;
        ++moves;
        return true;
    }
    void forward(std::span<const model::Row>, std::span<const model::SamplingParams>, model::RowOutputs&) override {}

    std::map<StreamId, int32_t> lengths;
    int copies = 0, moves = 0;

private:
    model::ModelConfig config_;
};

// A finished stream `kv` holding `tokens`, handed to the cache.
void cache_stream(LengthsBackend& backend, PromptCache& cache, StreamId kv, std::vector<TokenId> tokens) {
    backend.open_stream(kv, 64);
    backend.lengths[kv] = static_cast<int32_t>(tokens.size());
    EXPECT_TRUE(cache.adopt(kv, std::move(tokens)).empty());
}

TEST(ResumeFromCache, ARegeneratedPromptTakesItsEntryOver) {
    LengthsBackend backend;
    PromptCache cache(1000);
    cache_stream(backend, cache, 1, range(0, 30));  // a 20-token prompt and its 10-token reply
    backend.open_stream(2, 64);
    EXPECT_EQ(resume_from_cache(backend, cache, 2, range(0, 20)), 19);
    EXPECT_EQ(backend.moves, 1);
    EXPECT_EQ(backend.copies, 0);
    EXPECT_EQ(backend.lengths.count(1), 0u);  // the emptied entry is closed
    EXPECT_EQ(backend.lengths.at(2), 19);
    EXPECT_EQ(cache.entries(), 0u);
    EXPECT_EQ(cache.cached_tokens(), 0);
}

TEST(ResumeFromCache, ASmallPartOfAnEntryIsCopiedAndTheEntryStays) {
    // A shared system prompt: most of the entry is another conversation.
    LengthsBackend backend;
    PromptCache cache(1000);
    cache_stream(backend, cache, 1, range(0, 50));
    backend.open_stream(2, 64);
    std::vector<TokenId> prompt = range(0, 10);
    prompt.push_back(900);
    prompt.push_back(901);
    EXPECT_EQ(resume_from_cache(backend, cache, 2, prompt), 10);
    EXPECT_EQ(backend.copies, 1);
    EXPECT_EQ(backend.moves, 0);
    EXPECT_EQ(backend.lengths.at(1), 50);
    EXPECT_EQ(cache.entries(), 1u);
}

TEST(ResumeFromCache, ASecondRequestCopiesTheTakenPrefixFromTheRunningStream) {
    // n choices of one regenerated prompt: the first takes the entry over,
    // the second finds it in the first one's running stream.
    LengthsBackend backend;
    PromptCache cache(1000);
    cache_stream(backend, cache, 1, range(0, 30));
    const std::vector<TokenId> prompt = range(0, 20);
    backend.open_stream(2, 64);
    EXPECT_EQ(resume_from_cache(backend, cache, 2, prompt), 19);
    EXPECT_EQ(backend.moves, 1);
    backend.open_stream(3, 64);
    const RunningStream first{2, prompt};
    EXPECT_EQ(resume_from_cache(backend, cache, 3, prompt, {&first, 1}), 19);
    EXPECT_EQ(backend.copies, 1);
    EXPECT_EQ(backend.lengths.at(3), 19);
    // A running stream still reading its prompt lends only what it has read.
    backend.lengths[2] = 7;
    backend.open_stream(4, 64);
    EXPECT_EQ(resume_from_cache(backend, cache, 4, prompt, {&first, 1}), 7);
    EXPECT_EQ(backend.lengths.at(4), 7);
}

TEST(ResumeFromCache, ACacheEntryAsLongAsARunningStreamsPrefixIsUsedInstead) {
    LengthsBackend backend;
    PromptCache cache(1000);
    cache_stream(backend, cache, 1, range(0, 15));
    const std::vector<TokenId> running_tokens = range(0, 15);
    backend.open_stream(2, 64);
    backend.lengths[2] = 15;
    const RunningStream running{2, running_tokens};
    backend.open_stream(3, 64);
    EXPECT_EQ(resume_from_cache(backend, cache, 3, range(0, 20), {&running, 1}), 15);
    EXPECT_EQ(backend.moves, 1);  // the whole entry: taken over
    EXPECT_EQ(backend.copies, 0);
    EXPECT_EQ(backend.lengths.at(2), 15);  // the running stream untouched
}

}  // namespace
}  // namespace tf::engine
