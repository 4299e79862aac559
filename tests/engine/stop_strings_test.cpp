// "stop strings (on decoded text, not split across chunks)"
#include <gtest/gtest.h>

#include "engine/stop_strings.h"

namespace tf::engine {
namespace {

TEST(StopStrings, WithoutStopsEverythingPassesAtOnce) {
    StopStringMatcher m({});
    EXPECT_EQ(m.feed("abc").emit, "abc");
    EXPECT_EQ(m.flush(), "");
}

TEST(StopStrings, StopsBeforeTheStopString) {
    StopStringMatcher m({"END"});
    StopStringMatcher::Result r = m.feed("hello END world");
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.emit, "hello ");
}

TEST(StopStrings, APrefixIsHeldBackUntilResolved) {
    StopStringMatcher m({"END"});
    EXPECT_EQ(m.feed("abcE").emit, "abc");
    EXPECT_EQ(m.feed("N").emit, "");
    StopStringMatcher::Result r = m.feed("Dxyz");
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.emit, "");
}

TEST(StopStrings, AFalseStartIsReleased) {
    StopStringMatcher m({"END"});
    EXPECT_EQ(m.feed("abcEN").emit, "abc");
    StopStringMatcher::Result r = m.feed("X");
    EXPECT_FALSE(r.stopped);
    EXPECT_EQ(r.emit, "ENX");
}

TEST(StopStrings, TheEarliestOfSeveralStopsWins) {
    StopStringMatcher m({"world", "lo"});
    StopStringMatcher::Result r = m.feed("hello world");
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.emit, "hel");
}

TEST(StopStrings, HeldTextIsFlushedAtTheEnd) {
    StopStringMatcher m({"</s>"});
    EXPECT_EQ(m.feed("done </").emit, "done ");
    EXPECT_EQ(m.flush(), "</");
}

TEST(StopStrings, NothingAfterAStop) {
    StopStringMatcher m({"x"});
    EXPECT_TRUE(m.feed("ax").stopped);
    EXPECT_EQ(m.feed("more").emit, "");
    EXPECT_EQ(m.flush(), "");
}

TEST(StopStrings, MultiByteTextIsNeverSplit) {
    StopStringMatcher m({"日本語"});
    EXPECT_EQ(m.feed("これは日本").emit, "これは");
    EXPECT_EQ(m.feed("です").emit, "日本です");
}

}  // namespace
}  // namespace tf::engine
