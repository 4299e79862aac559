// The speed lines of `tensorfold generate --timings`, from times the test
// chooses.
#include <gtest/gtest.h>

#include "engine/generation_speed.h"

namespace tf::engine {
namespace {

TEST(GenerationSpeed, ThePromptEndsWhereTheFirstTokenLands) {
    GenerationSpeed speed(10.0);
    speed.step(0, 10.2);  // a prefill chunk: lands nothing
    speed.step(1, 10.5);  // the prompt's last chunk samples the first token
    for (int i = 1; i <= 4; ++i) speed.step(1, 10.5 + 0.025 * i);
    EXPECT_EQ(speed.reply_tokens(), 5);
    EXPECT_EQ(speed.decode_tokens(), 4);
    EXPECT_DOUBLE_EQ(speed.prompt_seconds(), 0.5);
    EXPECT_NEAR(speed.decode_seconds(), 0.1, 1e-12);
    EXPECT_EQ(speed.lines(500, 1.5),
              "       load time =    1500.00 ms\n"
              "prompt eval time =     500.00 ms /   500 tokens (    1.00 ms per token,  1000.00 tokens per second)\n"
              "       eval time =     100.00 ms /     4 tokens (   25.00 ms per token,    40.00 tokens per second)\n"
              "      total time =     600.00 ms /   505 tokens\n");
}

TEST(GenerationSpeed, AOneTokenReplyHasNoDecodeRate) {
    GenerationSpeed speed(0.0);
    speed.step(1, 0.25);
    EXPECT_EQ(speed.decode_tokens(), 0);
    const std::string lines = speed.lines(4, 0.0);
    EXPECT_NE(
        lines.find(
            "prompt eval time =     250.00 ms /     4 tokens (   62.50 ms per token,    16.00 tokens per second)"),
        std::string::npos)
        << lines;
    EXPECT_NE(lines.find("       eval time =       0.00 ms /     0 tokens\n"), std::string::npos) << lines;
}

TEST(GenerationSpeed, NothingLandedMeansAllOfItWasPrompt) {
    GenerationSpeed speed(1.0);
    speed.step(0, 2.0);  // e.g. cancelled while prefilling
    EXPECT_DOUBLE_EQ(speed.prompt_seconds(), 1.0);
    EXPECT_DOUBLE_EQ(speed.decode_seconds(), 0.0);
    EXPECT_EQ(speed.reply_tokens(), 0);
}

}  // namespace
}  // namespace tf::engine
