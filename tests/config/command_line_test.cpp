// The command line of `tensorfold serve`: defaults, what each Recall flag
// implies, and every rejection with the message a user sees.
#include <gtest/gtest.h>

#include <filesystem>

#include "config/command_line.h"

namespace tf::config {
namespace {

std::string source_model_dir() { return std::string(TF_SOURCE_DIR_FOR_TESTS) + "/models/tinycode"; }

ParseOutcome parse(std::vector<std::string> args) { return parse_command_line(args, "/nonexistent/bin/tensorfold"); }

ServerConfig serve(std::vector<std::string> flags) {
    flags.insert(flags.begin(), "serve");
    ParseOutcome outcome = parse(flags);
    EXPECT_TRUE(outcome.run) << outcome.message;
    EXPECT_EQ(outcome.command.subcommand, Subcommand::serve);
    return outcome.command.serve;
}

// Expects `serve flags...` to be refused with a message containing `needle`.
void expect_rejected(std::vector<std::string> flags, const std::string& needle) {
    flags.insert(flags.begin(), "serve");
    ParseOutcome outcome = parse(flags);
    EXPECT_FALSE(outcome.run);
    EXPECT_EQ(outcome.exit_code, 2);
    EXPECT_NE(outcome.message.find(needle), std::string::npos) << "message was: " << outcome.message;
}

TEST(ServeDefaults, AreThoseTheHelpPromises) {
    ServerConfig c = serve({});
    EXPECT_EQ(c.host, "127.0.0.1");
    EXPECT_EQ(c.port, 8000);
    EXPECT_EQ(c.api_key, "");
    EXPECT_EQ(c.served_model_name, "");
    EXPECT_EQ(c.ctx_size, 0);
    EXPECT_EQ(c.max_streams, 16);
    EXPECT_EQ(c.threads, 0);
    EXPECT_EQ(c.device, Device::automatic);
    EXPECT_EQ(c.log_level, "info");
}

TEST(ServeDefaults, RecallIsOffUnlessAFlagTurnsItOn) {
    // With no Recall flag the server starts with Recall disabled (docs/recall.md, "Flags").
    ServerConfig c = serve({});
    EXPECT_FALSE(c.recall.enabled);
    EXPECT_FALSE(c.recall.read_only);
    EXPECT_EQ(c.recall.dir, "");
}

TEST(ServeDefaults, RecallDiskIsOneSixteenthGib) {
    // Default disk budget: 0.0625 GiB, i.e. 64 MiB (docs/recall.md, "Flags" and "Sizing").
    ServerConfig c = serve({"--recall"});
    EXPECT_TRUE(c.recall.enabled);
    EXPECT_DOUBLE_EQ(c.recall.gib, 0.0625);
    EXPECT_EQ(c.recall.disk_bytes(), 64u << 20);
}

TEST(ServeDefaults, ModelIsTheEmbeddedTinycode) {
    ServerConfig c = serve({});
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(c.model_dir) / "config.json")) << c.model_dir;
    EXPECT_EQ(std::filesystem::path(c.model_dir).filename(), "tinycode");
}

TEST(RecallFlags, RecallDirImpliesRecall) {
    // Naming a directory is enough to switch Recall on (docs/recall.md, "Flags").
    ServerConfig c = serve({"--recall-dir", "/tmp/some-record"});
    EXPECT_TRUE(c.recall.enabled);
    EXPECT_FALSE(c.recall.read_only);
    EXPECT_EQ(c.recall.dir, "/tmp/some-record");
}

TEST(RecallFlags, RecallGibImpliesRecall) {
    // Setting a budget is enough to switch Recall on (docs/recall.md, "Flags").
    ServerConfig c = serve({"--recall-gib", "2"});
    EXPECT_TRUE(c.recall.enabled);
    EXPECT_DOUBLE_EQ(c.recall.gib, 2.0);
    EXPECT_EQ(c.recall.disk_bytes(), uint64_t{2} << 30);
}

TEST(RecallFlags, RecallReadOnlyImpliesRecall) {
    // Read-only mode switches Recall on as well (docs/recall.md, "Flags").
    ServerConfig c = serve({"--recall-read-only"});
    EXPECT_TRUE(c.recall.enabled);
    EXPECT_TRUE(c.recall.read_only);
}

TEST(RecallFlags, RecallGibTakesDecimalFractions) {
    EXPECT_DOUBLE_EQ(serve({"--recall-gib", "0.5"}).recall.gib, 0.5);
    EXPECT_DOUBLE_EQ(serve({"--recall-gib", ".25"}).recall.gib, 0.25);
    EXPECT_DOUBLE_EQ(serve({"--recall-gib=1.5"}).recall.gib, 1.5);
}

TEST(RecallFlags, RecallGibOfExactlyOneChunkIsAccepted) {
    ServerConfig c = serve({"--recall-gib", "0.00390625"});  // 4 MiB
    EXPECT_EQ(c.recall.disk_bytes(), kRecallChunkBytes);
}

TEST(RecallFlags, RecallGibZeroIsRejected) { expect_rejected({"--recall-gib", "0"}, "must be more than 0 GiB"); }

TEST(RecallFlags, RecallGibNegativeIsRejected) {
    expect_rejected({"--recall-gib=-1"}, "is not a decimal number of GiB");
}

TEST(RecallFlags, RecallGibNanIsRejected) { expect_rejected({"--recall-gib", "nan"}, "'nan' is not a decimal number"); }

TEST(RecallFlags, RecallGibInfinityIsRejected) { expect_rejected({"--recall-gib", "inf"}, "'inf' is not a decimal"); }

TEST(RecallFlags, RecallGibNonNumberIsRejected) {
    expect_rejected({"--recall-gib", "lots"}, "--recall-gib");
    expect_rejected({"--recall-gib", "lots"}, "'lots' is not a decimal number of GiB");
    expect_rejected({"--recall-gib", "1/16"}, "'1/16' is not a decimal number");
    expect_rejected({"--recall-gib", "0x10"}, "'0x10' is not a decimal number");
    expect_rejected({"--recall-gib", "1e3"}, "'1e3' is not a decimal number");
    expect_rejected({"--recall-gib", "1.2.3"}, "'1.2.3' is not a decimal number");
    expect_rejected({"--recall-gib", "."}, "'.' is not a decimal number");
}

TEST(RecallFlags, RecallGibUnderOneChunkIsRejected) {
    expect_rejected({"--recall-gib", "0.001"}, "0.001 GiB is under one chunk file (4 MiB = 0.00390625 GiB)");
}

TEST(RecallFlags, RecallGibOverTheLimitIsRejected) {
    expect_rejected({"--recall-gib", "99999999999999999999"}, "is over the limit of 16384 GiB");
}

TEST(RecallFlags, RecallGibMissingValueIsRejected) { expect_rejected({"--recall-gib"}, "--recall-gib"); }

TEST(RecallFlags, EmptyRecallDirIsRejected) { expect_rejected({"--recall-dir", ""}, "--recall-dir: must not be empty"); }

TEST(CheckRecallGib, AcceptsValidSizes) {
    EXPECT_EQ(check_recall_gib("0.0625"), "");
    EXPECT_EQ(check_recall_gib("16384"), "");
}

TEST(ServeFlags, ListenAddressAndPort) {
    ServerConfig c = serve({"--host", "0.0.0.0", "--port", "9123"});
    EXPECT_EQ(c.host, "0.0.0.0");
    EXPECT_EQ(c.port, 9123);
    EXPECT_EQ(serve({"--port", "0"}).port, 0);
}

TEST(ServeFlags, PortOutOfRangeIsRejected) {
    expect_rejected({"--port", "65536"}, "--port");
    expect_rejected({"--port", "http"}, "--port");
}

TEST(ServeFlags, EmptyHostIsRejected) { expect_rejected({"--host", ""}, "--host"); }

TEST(ServeFlags, ApiKeyAndServedName) {
    ServerConfig c = serve({"--api-key", "s3cret", "--served-model-name", "coder"});
    EXPECT_EQ(c.api_key, "s3cret");
    EXPECT_EQ(c.served_model_name, "coder");
}

TEST(ServeFlags, EmptyApiKeyIsRejected) { expect_rejected({"--api-key", ""}, "--api-key"); }

TEST(ServeFlags, ModelAliasesRepeatAndEachTakesOneName) {
    ServerConfig c = serve({"--model-alias", "*", "--model-alias", "claude-haiku-4-5"});
    EXPECT_EQ(c.model_aliases, (std::vector<std::string>{"*", "claude-haiku-4-5"}));
}

TEST(ServeFlags, EmptyModelAliasIsRejected) { expect_rejected({"--model-alias", ""}, "--model-alias"); }

TEST(ServeFlags, SizesAndThreads) {
    ServerConfig c = serve({"--ctx-size", "2048", "--max-streams", "4", "--threads", "2"});
    EXPECT_EQ(c.ctx_size, 2048);
    EXPECT_EQ(c.max_streams, 4);
    EXPECT_EQ(c.threads, 2);
}

TEST(ServeFlags, BadSizesAreRejected) {
    expect_rejected({"--ctx-size", "-5"}, "--ctx-size");
    expect_rejected({"--max-streams", "0"}, "--max-streams");
    expect_rejected({"--threads", "-1"}, "--threads");
    expect_rejected({"--threads", "two"}, "--threads");
}

TEST(ServeFlags, DeviceChoices) {
    EXPECT_EQ(serve({"--device", "cpu"}).device, Device::cpu);
    EXPECT_EQ(serve({"--device", "cuda"}).device, Device::cuda);
    EXPECT_EQ(serve({"--device", "auto"}).device, Device::automatic);
    expect_rejected({"--device", "tpu"}, "--device");
}

TEST(ServeFlags, DraftTokensBoundOwnContextDrafts) {
    EXPECT_EQ(serve({}).draft_tokens, 32);
    EXPECT_EQ(serve({"--draft-tokens", "0"}).draft_tokens, 0);
    EXPECT_EQ(serve({"--draft-tokens", "8"}).draft_tokens, 8);
    expect_rejected({"--draft-tokens", "-1"}, "--draft-tokens");
    expect_rejected({"--draft-tokens", "33"}, "--draft-tokens");
}

TEST(ServeFlags, GpuMemoryFractionIsAShareOfOne) {
    EXPECT_DOUBLE_EQ(serve({}).gpu_memory_fraction, 0.90);
    EXPECT_DOUBLE_EQ(serve({"--gpu-memory-fraction", "0.5"}).gpu_memory_fraction, 0.5);
    EXPECT_DOUBLE_EQ(serve({"--gpu-memory-fraction", "1"}).gpu_memory_fraction, 1.0);
    expect_rejected({"--gpu-memory-fraction", "0"}, "--gpu-memory-fraction");
    expect_rejected({"--gpu-memory-fraction", "1.5"}, "--gpu-memory-fraction");
    expect_rejected({"--gpu-memory-fraction", "half"}, "--gpu-memory-fraction");
}

// --device resolves before any weight loads: auto takes a GPU when there is
// one and says why it did not otherwise; cuda without one is refused by name.
TEST(ServeDevice, AutoPicksCudaOnlyWhenADeviceIsThere) {
    EXPECT_EQ(resolve_device(Device::automatic, true, 1, "").device, Device::cuda);
    EXPECT_TRUE(resolve_device(Device::automatic, true, 1, "").note.empty());
    const DeviceChoice none = resolve_device(Device::automatic, true, 0, "no CUDA-capable device is detected");
    EXPECT_EQ(none.device, Device::cpu);
    EXPECT_NE(none.note.find("no CUDA-capable device is detected"), std::string::npos) << none.note;
    const DeviceChoice unbuilt = resolve_device(Device::automatic, false, 0, "");
    EXPECT_EQ(unbuilt.device, Device::cpu);
    EXPECT_NE(unbuilt.note.find("built without CUDA"), std::string::npos) << unbuilt.note;
    EXPECT_EQ(resolve_device(Device::cpu, true, 4, "").device, Device::cpu);
}

TEST(ServeDevice, CudaWithoutADeviceIsAClearError) {
    EXPECT_EQ(resolve_device(Device::cuda, true, 2, "").device, Device::cuda);
    for (const auto& [built, devices] : {std::pair{false, 0}, std::pair{true, 0}}) {
        try {
            resolve_device(Device::cuda, built, devices, "CUDA driver version is insufficient");
            ADD_FAILURE() << "accepted --device cuda with built=" << built << " devices=" << devices;
        } catch (const std::invalid_argument& e) {
            EXPECT_EQ(std::string(e.what()).rfind("--device cuda: ", 0), 0u) << e.what();
        }
    }
}

TEST(ServeFlags, LogLevels) {
    EXPECT_EQ(serve({"--log-level", "debug"}).log_level, "debug");
    expect_rejected({"--log-level", "loud"}, "--log-level");
}

TEST(ServeFlags, UnknownFlagIsRejected) { expect_rejected({"--recal"}, "--recal"); }

TEST(ServeModel, ExplicitDirectoryIsUsed) {
    ServerConfig c = serve({source_model_dir()});
    EXPECT_EQ(std::filesystem::path(c.model_dir), std::filesystem::weakly_canonical(source_model_dir()));
}

TEST(ServeModel, MissingDirectoryIsRejected) { expect_rejected({"/no/such/model"}, "/no/such/model"); }

TEST(Help, ServeHelpListsEveryFlagWithItsDefault) {
    ParseOutcome outcome = parse({"serve", "--help"});
    EXPECT_FALSE(outcome.run);
    EXPECT_EQ(outcome.exit_code, 0);
    for (const char* flag : {"MODEL", "--host", "--port", "--api-key", "--served-model-name", "--model-alias", "--ctx-size",
                             "--max-streams", "--threads", "--device", "--gpu-memory-fraction", "--draft-tokens", "--log-level", "--recall", "--recall-dir",
                             "--recall-gib", "--recall-read-only"}) {
        EXPECT_NE(outcome.message.find(flag), std::string::npos) << flag << " missing from:\n" << outcome.message;
    }
    for (const char* shown_default : {"127.0.0.1", "8000", "0.0625", "auto", "info", "16"}) {
        EXPECT_NE(outcome.message.find(shown_default), std::string::npos) << shown_default;
    }
}

TEST(Help, VersionPrintsTheVersion) {
    ParseOutcome outcome = parse({"--version"});
    EXPECT_FALSE(outcome.run);
    EXPECT_EQ(outcome.exit_code, 0);
    EXPECT_EQ(outcome.message.rfind("tensorfold ", 0), 0u) << outcome.message;
}

TEST(Help, NoSubcommandShowsHelpAndFails) {
    ParseOutcome outcome = parse({});
    EXPECT_FALSE(outcome.run);
    EXPECT_EQ(outcome.exit_code, 2);
    EXPECT_NE(outcome.message.find("serve"), std::string::npos);
}

TEST(Help, UnknownSubcommandIsRejected) {
    ParseOutcome outcome = parse({"server"});
    EXPECT_FALSE(outcome.run);
    EXPECT_EQ(outcome.exit_code, 2);
}

}  // namespace
}  // namespace tf::config
