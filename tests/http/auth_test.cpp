// "--api-key: every /v1/* route needs Authorization: Bearer <key>
// (constant-time compare) else 401".
#include <gtest/gtest.h>

#include "http/auth.h"

namespace tf::http {
namespace {

TEST(Auth, NoKeyAllowsEverything) {
    EXPECT_TRUE(authorized("", ""));
    EXPECT_TRUE(authorized("", "Bearer anything"));
}

TEST(Auth, TheRightBearerKeyPasses) {
    EXPECT_TRUE(authorized("s3cret", "Bearer s3cret"));
    EXPECT_TRUE(authorized("s3cret", "bearer s3cret"));
}

TEST(Auth, EverythingElseFails) {
    EXPECT_FALSE(authorized("s3cret", ""));
    EXPECT_FALSE(authorized("s3cret", "s3cret"));
    EXPECT_FALSE(authorized("s3cret", "Bearer s3cre"));
    EXPECT_FALSE(authorized("s3cret", "Bearer s3cret "));
    EXPECT_FALSE(authorized("s3cret", "Bearer S3CRET"));
    EXPECT_FALSE(authorized("s3cret", "Basic s3cret"));
}

TEST(ConstantTimeEqual, ComparesWholeStrings) {
    EXPECT_TRUE(constant_time_equal("abc", "abc"));
    EXPECT_FALSE(constant_time_equal("abc", "abd"));
    EXPECT_FALSE(constant_time_equal("abc", "ab"));
    EXPECT_FALSE(constant_time_equal("", "a"));
    EXPECT_TRUE(constant_time_equal("", ""));
}

}  // namespace
}  // namespace tf::http
