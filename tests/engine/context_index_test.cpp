// The copy window's own-context source.
#include <gtest/gtest.h>

#include "engine/context_index.h"

namespace tf::engine {
namespace {

ContextIndex index_of(std::vector<TokenId> tokens) {
    ContextIndex index;
    index.append(tokens);
    return index;
}

TEST(ContextIndex, NoMatchInFreshText) {
    ContextIndex index = index_of({1, 2, 3, 4, 5, 6, 7});
    EXPECT_EQ(index.longest_match().length, 0);
    EXPECT_TRUE(index.continuation(index.longest_match(), 8).empty());
}

TEST(ContextIndex, FindsTheEarlierOccurrenceAndItsContinuation) {
    // "a b c d e ... a b c" → draft "d e"
    ContextIndex index = index_of({10, 11, 12, 13, 14, 99, 10, 11, 12});
    ContextMatch match = index.longest_match();
    EXPECT_EQ(match.length, 3);
    EXPECT_EQ(match.end, 2);
    EXPECT_EQ(index.continuation(match, 2), (std::vector<TokenId>{13, 14}));
    // Past the newest token the text is taken to go on repeating.
    EXPECT_EQ(index.continuation(match, 8), (std::vector<TokenId>{13, 14, 99, 10, 11, 12, 13, 14}));
}

TEST(ContextIndex, ShorterThanTheMinimumIsNoMatch) {
    ContextIndex index = index_of({10, 11, 50, 60, 10, 11});
    EXPECT_EQ(index.longest_match().length, 0);
}

TEST(ContextIndex, LongestMatchWins) {
    // Two earlier occurrences of "2 3 4"; the one preceded by "1" matches longer.
    ContextIndex index = index_of({1, 2, 3, 4, 100, 7, 2, 3, 4, 200, 8, 1, 2, 3, 4});
    ContextMatch match = index.longest_match();
    EXPECT_EQ(match.length, 4);
    EXPECT_EQ(index.continuation(match, 1), (std::vector<TokenId>{100}));
}

TEST(ContextIndex, MostRecentWinsTies) {
    ContextIndex index = index_of({5, 2, 3, 4, 100, 6, 2, 3, 4, 200, 7, 2, 3, 4});
    ContextMatch match = index.longest_match();
    EXPECT_EQ(match.length, 3);
    EXPECT_EQ(index.continuation(match, 1), (std::vector<TokenId>{200}));
}

TEST(ContextIndex, MatchMayOverlapTheTail) {
    // A run of one token: the continuation is the run itself, as long as asked.
    ContextIndex index = index_of({9, 9, 9, 9, 9, 9});
    ContextMatch match = index.longest_match();
    EXPECT_EQ(match.length, 5);
    EXPECT_EQ(index.continuation(match, 4), (std::vector<TokenId>{9, 9, 9, 9}));
}

TEST(ContextIndex, AContinuationThatReachesTheNewestTokenRepeatsItsPeriod) {
    // "1 2 3 1 2 3 1 2": the tail matched three tokens back, so the draft
    // goes on "3 1 2 3 1 2 ...".
    ContextIndex index = index_of({1, 2, 3, 1, 2, 3, 1, 2});
    ContextMatch match = index.longest_match();
    EXPECT_EQ(match.length, 5);
    EXPECT_EQ(match.end, 4);
    EXPECT_EQ(index.continuation(match, 7), (std::vector<TokenId>{3, 1, 2, 3, 1, 2, 3}));
}

TEST(ContextIndex, AppendingOneTokenAtATimeMatchesAppendingAll) {
    std::vector<TokenId> tokens;
    for (int i = 0; i < 500; ++i) tokens.push_back((i * 7919) % 13);
    ContextIndex bulk = index_of(tokens);
    ContextIndex single;
    for (TokenId t : tokens) single.append(t);
    EXPECT_EQ(bulk.longest_match().length, single.longest_match().length);
    EXPECT_EQ(bulk.longest_match().end, single.longest_match().end);
}

TEST(ContextIndex, MeasuredLengthIsBounded) {
    std::vector<TokenId> text;
    for (int i = 0; i < 400; ++i) text.push_back(1000 + i);
    std::vector<TokenId> tokens = text;
    tokens.push_back(7);
    tokens.insert(tokens.end(), text.begin(), text.end());
    ContextIndex index = index_of(tokens);
    EXPECT_EQ(index.longest_match().length, ContextIndex::kMaxMeasured);
    EXPECT_EQ(index.continuation(index.longest_match(), 1), (std::vector<TokenId>{7}));
}

}  // namespace
}  // namespace tf::engine
