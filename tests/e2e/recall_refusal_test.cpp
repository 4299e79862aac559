// A record the server must refuse is refused before any weight loads
// (issue 14, item 5). The model directory here has tinycode's tokenizer and
// config but a model.safetensors that is garbage: a server that got as far as
// loading weights would fail naming that file. A refusal that names the
// record and never mentions model.safetensors came first.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include "server_process.h"

namespace tf::e2e {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

// Built once per test binary run, by the first test: a real record
// (identity, lock, one chunk file) written by tinycode, and the model
// directory with broken weights. Made in SetUp rather than SetUpTestSuite so
// that a failure there fails the test instead of skipping it.
class RecallRefusal : public ::testing::Test {
protected:
    static void make_template() {
        scratch_ = new TempDir;
        const std::string record = *scratch_ / "template";
        std::string log;
        {
            ServerProcess server({"--recall-dir", record});
            ASSERT_TRUE(server.listening()) << server.output();
            // Greedy: a sampled reply may stop after a few tokens, and a
            // prompt and reply shorter than 17 ids are too short to record.
            const Response r = server.post(
                "/v1/completions", R"({"model":"tinycode","prompt":"def add(a, b):\n","max_tokens":24,"temperature":0})");
            ASSERT_EQ(r.status, 200) << r.body;
            ASSERT_EQ(server.stop(), 0) << server.output();  // SIGTERM: the writer takes its adds first
            log = r.body + "\n" + server.output();
        }
        ASSERT_TRUE(fs::exists(record + "/chunk-000000000001.ids")) << log;
        const std::string model = *scratch_ / "broken-weights";
        fs::create_directory(model);
        for (const auto& entry : fs::directory_iterator(tinycode_dir())) {
            if (entry.path().filename() != "model.safetensors") fs::copy_file(entry.path(), model / entry.path().filename());
        }
        // A header length of 2^63: no safetensors reader gets past it.
        std::ofstream(model + "/model.safetensors", std::ios::binary) << std::string("\0\0\0\0\0\0\0\x80garbage", 15);
        template_ready_ = true;
    }
    static void TearDownTestSuite() {
        delete scratch_;
        scratch_ = nullptr;
    }

    void SetUp() override {
        if (!scratch_) make_template();
        ASSERT_TRUE(template_ready_) << "the record and model that every test here copies could not be made";
        record_ = dir_ / "record";
        ASSERT_EQ(shell("cp -a '" + *scratch_ / "template" + "' '" + record_ + "' && echo ok"), "ok\n");
    }

    static std::string broken_model() { return *scratch_ / "broken-weights"; }

    // Starts the server on the broken model and this test's record; its output
    // after it exited, which must have been a refusal.
    std::string refused_output(std::vector<std::string> extra = {}) {
        std::vector<std::string> args = {"--recall-dir", record_};
        args.insert(args.end(), extra.begin(), extra.end());
        ServerProcess server(args, broken_model());
        EXPECT_FALSE(server.listening());
        EXPECT_EQ(server.wait(), 1);
        const std::string out = server.output();
        EXPECT_EQ(out.find("model.safetensors"), std::string::npos) << "weights were loaded first:\n" << out;
        return out;
    }

    std::string chunk() const { return record_ + "/chunk-000000000001.ids"; }

    static inline TempDir* scratch_ = nullptr;
    static inline bool template_ready_ = false;
    TempDir dir_;
    std::string record_;
};

void expect_mentions(const std::string& out, std::initializer_list<std::string> needles) {
    for (const std::string& needle : needles) EXPECT_NE(out.find(needle), std::string::npos) << needle << " in:\n" << out;
}

TEST_F(RecallRefusal, TheBrokenWeightsFailNamingTheirFileOnceTheRecordIsFine) {
    // The control: with a good record the server gets to the weights and
    // fails there, so the absence of that failure below means "refused first".
    ServerProcess server({"--recall-dir", record_}, broken_model());
    EXPECT_EQ(server.wait(), 1);
    EXPECT_NE(server.output().find("model.safetensors"), std::string::npos) << server.output();
}

TEST_F(RecallRefusal, ARecordOfAnotherTokenizer) {
    std::ofstream(record_ + "/identity", std::ios::trunc)
        << "format 1\ntokenizer_sha256 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"
           "vocab_size 151936\nmodel some-other-model\n";
    expect_mentions(refused_output(), {record_, "00112233445566778899aabbccddeeff", "some-other-model"});
}

TEST_F(RecallRefusal, AMissingIdentityBesideChunkFiles) {
    fs::remove(record_ + "/identity");
    expect_mentions(refused_output(), {record_, "no identity"});
    EXPECT_FALSE(fs::exists(record_ + "/identity")) << "no new record was started over the old ids";
}

TEST_F(RecallRefusal, AnEditedIdentity) {
    std::ofstream(record_ + "/identity", std::ios::app) << "edited_by someone\n";
    expect_mentions(refused_output(), {record_ + "/identity", "corrupt", "edited_by"});
}

TEST_F(RecallRefusal, ARecordDirectoryThatIsASymlink) {
    const std::string link = dir_ / "link";
    fs::create_directory_symlink(record_, link);
    record_ = link;
    expect_mentions(refused_output(), {link, "symbolic link"});
}

TEST_F(RecallRefusal, ARecordDirectoryOpenToGroupAndOthers) {
    fs::permissions(record_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                 fs::perms::others_read | fs::perms::others_exec,
                    fs::perm_options::replace);
    expect_mentions(refused_output(), {record_, "0755", "chmod 700"});
}

TEST_F(RecallRefusal, AChunkFileThatIsASymlinkEvenReadOnly) {
    fs::rename(chunk(), dir_ / "moved.ids");
    fs::create_symlink(dir_ / "moved.ids", chunk());
    expect_mentions(refused_output(), {chunk(), "symbolic link"});
    expect_mentions(refused_output({"--recall-read-only"}), {chunk(), "symbolic link"});
}

TEST_F(RecallRefusal, AChunkFileOpenToOthers) {
    fs::permissions(chunk(), fs::perms::others_read, fs::perm_options::add);
    expect_mentions(refused_output(), {chunk(), "0604", "chmod 600"});
}

TEST_F(RecallRefusal, ADirectoryOrChunkFileOwnedByAnotherUser) {
    if (::geteuid() != 0) GTEST_SKIP() << "only root can give files to another user";
    ASSERT_EQ(::chown(chunk().c_str(), kNobody, kNobody), 0);
    expect_mentions(refused_output(), {chunk(), "uid 65534"});
    ASSERT_EQ(::chown(chunk().c_str(), 0, 0), 0);
    ASSERT_EQ(::chown(record_.c_str(), kNobody, kNobody), 0);
    expect_mentions(refused_output(), {record_, "uid 65534"});
}

}  // namespace
}  // namespace tf::e2e
