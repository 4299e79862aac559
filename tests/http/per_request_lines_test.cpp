// The lines a client changes on every request, set aside from the start of
// the system prompt so that two turns of a conversation share their
// leading tokens (per_request_lines.h); everything else is left as sent.
#include <gtest/gtest.h>

#include "http/per_request_lines.h"

namespace tf::http {
namespace {

using tokenizer::ChatMessage;

const std::string kBilling = "x-anthropic-billing-header: cc_version=2.0.14.abc; cc_entrypoint=cli; cch=5e1f0;";

TEST(PerRequestLines, ClaudeCodesBillingLineIsLeftOut) {
    EXPECT_EQ(without_per_request_lines(kBilling + "\nYou are Claude Code."), "You are Claude Code.");
}

TEST(PerRequestLines, TheBlankLinesAfterItGoWithIt) {
    // Claude Code sends the line as a system block of its own, which the
    // Messages route joins to the next block by a blank line.
    EXPECT_EQ(without_per_request_lines(kBilling + "\n\nYou are Claude Code."), "You are Claude Code.");
    EXPECT_EQ(without_per_request_lines(kBilling + "\r\n\r\nYou are Claude Code."), "You are Claude Code.");
}

TEST(PerRequestLines, TwoPromptsDifferingOnlyInTheLineBecomeTheSame) {
    EXPECT_EQ(without_per_request_lines("x-anthropic-billing-header: cc_version=2.0.14.abc; cch=aaaa;\nBe brief."),
              without_per_request_lines("x-anthropic-billing-header: cc_version=2.0.15.def; cch=bbbb;\nBe brief."));
}

TEST(PerRequestLines, TheLineAnywhereButTheStartIsTheUsersText) {
    for (const std::string& text : std::vector<std::string>{"You code.\n" + kBilling, " " + kBilling + "\nYou code.", "You code."}) {
        EXPECT_EQ(without_per_request_lines(text), text);
    }
}

TEST(PerRequestLines, TheOnlyKnownOpeningIsClaudeCodesBillingLine) {
    ASSERT_EQ(per_request_line_openings().size(), 1u);
    EXPECT_EQ(per_request_line_openings()[0], "x-anthropic-billing-header:");
}

TEST(PerRequestLines, AFirstSystemOrDeveloperMessageLosesTheLine) {
    for (const char* role : {"system", "developer"}) {
        std::vector<ChatMessage> messages = {{role, kBilling + "\nBe brief."}, {"user", "Hi"}};
        set_aside_per_request_lines(messages);
        ASSERT_EQ(messages.size(), 2u) << role;
        EXPECT_EQ(messages[0].content, "Be brief.") << role;
    }
}

TEST(PerRequestLines, AFirstMessageThatHeldOnlyTheLineIsRemoved) {
    std::vector<ChatMessage> messages = {{"system", kBilling}, {"user", "Hi"}};
    set_aside_per_request_lines(messages);
    ASSERT_EQ(messages.size(), 1u);
    EXPECT_EQ(messages[0].role, "user");
}

TEST(PerRequestLines, OtherMessagesAreLeftAsSent) {
    std::vector<ChatMessage> messages = {{"user", kBilling + "\nHi"}, {"system", kBilling + "\nLater."}};
    const std::vector<ChatMessage> sent = messages;
    set_aside_per_request_lines(messages);
    ASSERT_EQ(messages.size(), 2u);
    EXPECT_EQ(messages[0].content, sent[0].content);
    EXPECT_EQ(messages[1].content, sent[1].content);
}

}  // namespace
}  // namespace tf::http
