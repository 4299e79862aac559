// The identity file and what a server does with it at start-up.
#include <gtest/gtest.h>

#include <fstream>

#include "recall/identity.h"
#include "recall/record.h"
#include "recall_test_util.h"

namespace tf::recall {
namespace {

using testing::TempDir;

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Expects Record::open to throw a RecallError whose message holds every needle.
void expect_refused(const RecordOptions& options, std::initializer_list<std::string> needles) {
    try {
        Record::open(options);
        ADD_FAILURE() << "the record opened";
    } catch (const RecallError& error) {
        std::string message = error.what();
        for (const std::string& needle : needles) {
            EXPECT_NE(message.find(needle), std::string::npos) << "no '" << needle << "' in: " << message;
        }
    }
}

TEST(IdentityText, RoundTripsDigestVocabularySizeAndModel) {
    RecordIdentity identity{testing::test_tokenizer(), "Qwen3 8B (bf16)"};
    std::string problem;
    std::optional<RecordIdentity> parsed = parse_identity(format_identity(identity), &problem);
    ASSERT_TRUE(parsed) << problem;
    EXPECT_EQ(*parsed, identity);
}

TEST(IdentityText, NamesWhatIsWrongWithAMalformedFile) {
    std::string problem;
    EXPECT_FALSE(parse_identity("format 1\nvocab_size 10\nmodel m\n", &problem));
    EXPECT_NE(problem.find("tokenizer_sha256"), std::string::npos) << problem;
    EXPECT_FALSE(parse_identity("format 1\ntokenizer_sha256 0123456789abcdef\nvocab_size ten\nmodel m\n", &problem));
    EXPECT_NE(problem.find("vocab_size"), std::string::npos) << problem;
    EXPECT_FALSE(parse_identity("format 2\n", &problem));
    EXPECT_NE(problem.find("format"), std::string::npos) << problem;
    EXPECT_FALSE(parse_identity("", &problem));
}

// The writer creates `identity` as a small 0600 text file recording the
// tokenizer digest, the vocabulary size and the model (docs/recall.md, "On disk").
TEST(IdentityFile, AWriterCreatesItWithDigestVocabularySizeAndModelMode0600) {
    TempDir dir;
    RecordOptions options = testing::small_options(dir.sub("record"));
    options.model = "tinycode";
    auto record = Record::open(options);
    std::string path = dir.sub("record") + "/identity";
    std::string text = read_text(path);
    EXPECT_NE(text.find("tokenizer_sha256 0123456789abcdef0123456789abcdef\n"), std::string::npos) << text;
    EXPECT_NE(text.find("vocab_size 32000\n"), std::string::npos) << text;
    EXPECT_NE(text.find("model tinycode\n"), std::string::npos) << text;
    EXPECT_EQ(testing::file_mode(path), 0600u);
    EXPECT_LT(text.size(), 512u);  // stays a few lines
}

// A second model with an identical tokenizer opens the same record as a
// writer, and the file still names the model that created it (docs/recall.md,
// "On disk" and "Privacy").
TEST(IdentityFile, ModelsWithTheSameTokenizerShareOneRecordAndItKeepsTheFirstModel) {
    TempDir dir;
    RecordOptions options = testing::small_options(dir.sub("record"));
    options.model = "first-model";
    std::vector<uint32_t> ids = testing::distinct_ids(1, 300);
    Record::open(options)->add(ids);
    options.model = "second-model";
    auto record = Record::open(options);
    EXPECT_EQ(record->state(), RecallState::writing);
    EXPECT_EQ(record->lookup(testing::slice(ids, 0, 100), 8).continuation, testing::slice(ids, 100, 108));
    std::optional<RecordIdentity> identity = read_identity(dir.sub("record"));
    ASSERT_TRUE(identity);
    EXPECT_EQ(identity->model, "first-model");
}

// A different tokenizer is refused at open, and the error identifies the
// tokenizer that wrote the record and suggests --recall-dir (docs/recall.md, "On disk").
TEST(IdentityFile, AServerWithAnotherTokenizerRefusesAndNamesDigestVocabularySizeAndModel) {
    TempDir dir;
    RecordOptions options = testing::small_options(dir.sub("record"));
    options.model = "llama-writer";
    Record::open(options);
    options.tokenizer = testing::other_tokenizer();
    options.model = "qwen-reader";
    expect_refused(options, {"0123456789abcdef0123456789abcdef", "32000", "llama-writer", "--recall-dir"});
    // A read-only server refuses too: it would draft another tokenizer's ids.
    options.read_only = true;
    expect_refused(options, {"0123456789abcdef0123456789abcdef", "32000", "llama-writer"});
}

TEST(IdentityFile, ASameDigestWithAnotherVocabularySizeIsAnotherTokenizer) {
    TempDir dir;
    RecordOptions options = testing::small_options(dir.sub("record"));
    Record::open(options);
    options.tokenizer.vocab_size = 32001;
    expect_refused(options, {"32000", "32001"});
}

// Issue 5: "a missing or corrupt identity is an error that says what to do,
// never silent reuse".
TEST(IdentityFile, ACorruptIdentityIsAnErrorThatSaysWhatToDo) {
    TempDir dir;
    RecordOptions options = testing::small_options(dir.sub("record"));
    Record::open(options)->add(testing::distinct_ids(1, 100));
    std::ofstream(dir.sub("record") + "/identity") << "tokenizer_sha256 zz\n";
    expect_refused(options, {"identity is corrupt", "Delete the directory", "--recall-dir"});
}

TEST(IdentityFile, ChunkFilesWithoutAnIdentityAreAnErrorThatSaysWhatToDo) {
    TempDir dir;
    RecordOptions options = testing::small_options(dir.sub("record"));
    Record::open(options)->add(testing::distinct_ids(1, 100));
    ASSERT_EQ(::unlink((dir.sub("record") + "/identity").c_str()), 0);
    expect_refused(options, {"no identity", "Delete the directory", "--recall-dir"});
}

// Issue 5: "a brand-new empty directory, or a directory with no chunk files
// and no identity, is initialized fresh".
TEST(IdentityFile, AnExistingDirectoryWithNoChunksAndNoIdentityIsInitializedFresh) {
    TempDir dir;
    std::ofstream(dir.sub("README")) << "someone else's file\n";
    auto record = Record::open(testing::small_options(dir.path()));
    EXPECT_EQ(record->state(), RecallState::writing);
    EXPECT_TRUE(testing::exists(dir.sub("identity")));
    EXPECT_TRUE(testing::exists(dir.sub("README")));
}

// The default location sits under $HOME/.cache and differs per tokenizer
// (docs/recall.md, "Flags").
TEST(DefaultDirectory, IsUnderHomeCacheNamedByTheTokenizer) {
    EXPECT_EQ(Record::default_directory(testing::test_tokenizer(), "/home/ann"),
              "/home/ann/.cache/tensorfold/recall/tokenizer-0123456789abcdef");
    EXPECT_NE(Record::default_directory(testing::test_tokenizer(), "/h"),
              Record::default_directory(testing::other_tokenizer(), "/h"));
    EXPECT_THROW(Record::default_directory(testing::test_tokenizer(), ""), RecallError);
}

TEST(DefaultDirectory, IsCreatedWithMode0700WhenNoRecallDirIsGiven) {
    TempDir home;
    RecordOptions options = testing::small_options("");
    options.home = home.path();
    auto record = Record::open(options);
    std::string expected = home.path() + "/.cache/tensorfold/recall/tokenizer-0123456789abcdef";
    EXPECT_EQ(record->dir(), expected);
    EXPECT_EQ(testing::file_mode(expected), 0700u);
    EXPECT_EQ(testing::file_mode(home.path() + "/.cache/tensorfold/recall"), 0700u);
    EXPECT_TRUE(testing::exists(expected + "/identity"));
}

TEST(RecordOptionsCheck, RejectsABadDigestAndARecordSmallerThanOneChunk) {
    TempDir dir;
    RecordOptions options = testing::small_options(dir.sub("record"));
    options.tokenizer.digest_hex = "not hex";
    EXPECT_THROW(Record::open(options), RecallError);
    options = testing::small_options(dir.sub("record"));
    options.capacity_bytes = 4 * options.chunk_ids - 1;
    EXPECT_THROW(Record::open(options), RecallError);
}

}  // namespace
}  // namespace tf::recall
