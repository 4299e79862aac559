// Finding the embedded default model "relative to the executable or its
// install prefix", on real directory trees in a temp directory.
#include <gtest/gtest.h>

#include <fstream>

#include "config/model_dir.h"

namespace fs = std::filesystem;

namespace tf::config {
namespace {

class ModelDirTest : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() / ("tf-model-dir-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
        fs::create_directories(root_);
    }
    void TearDown() override { fs::remove_all(root_); }

    void make_model(const fs::path& dir) {
        fs::create_directories(dir);
        std::ofstream(dir / "config.json") << "{}";
    }

    fs::path root_;
};

TEST_F(ModelDirTest, FoundBesideTheExecutable) {
    make_model(root_ / "bin" / "models" / "tinycode");
    auto found = find_default_model_dir(root_ / "bin" / "tensorfold");
    ASSERT_TRUE(found);
    EXPECT_EQ(*found, fs::weakly_canonical(root_ / "bin" / "models" / "tinycode"));
}

TEST_F(ModelDirTest, FoundFromABuildDirectoryInsideTheSourceTree) {
    make_model(root_ / "models" / "tinycode");
    auto found = find_default_model_dir(root_ / "build" / "tensorfold");
    ASSERT_TRUE(found);
    EXPECT_EQ(*found, fs::weakly_canonical(root_ / "models" / "tinycode"));
}

TEST_F(ModelDirTest, FoundUnderTheInstallPrefix) {
    make_model(root_ / "share" / "tensorfold" / "models" / "tinycode");
    auto found = find_default_model_dir(root_ / "bin" / "tensorfold");
    ASSERT_TRUE(found);
    EXPECT_EQ(*found, fs::weakly_canonical(root_ / "share" / "tensorfold" / "models" / "tinycode"));
}

TEST_F(ModelDirTest, BesideTheExecutableWinsOverTheInstallPrefix) {
    make_model(root_ / "bin" / "models" / "tinycode");
    make_model(root_ / "share" / "tensorfold" / "models" / "tinycode");
    EXPECT_EQ(*find_default_model_dir(root_ / "bin" / "tensorfold"),
              fs::weakly_canonical(root_ / "bin" / "models" / "tinycode"));
}

TEST_F(ModelDirTest, ADirectoryWithoutConfigJsonIsSkipped) {
    fs::create_directories(root_ / "bin" / "models" / "tinycode");
    make_model(root_ / "share" / "tensorfold" / "models" / "tinycode");
    EXPECT_EQ(*find_default_model_dir(root_ / "bin" / "tensorfold"),
              fs::weakly_canonical(root_ / "share" / "tensorfold" / "models" / "tinycode"));
}

TEST_F(ModelDirTest, CandidatesEndWithTheSourceTree) {
    auto candidates = default_model_candidates(root_ / "bin" / "tensorfold");
    ASSERT_EQ(candidates.size(), 4u);
    EXPECT_EQ(candidates.back(), fs::path(TF_SOURCE_DIR_FOR_TESTS) / "models" / "tinycode");
}

TEST(EmbeddedModel, TheRepositoryShipsTinycode) {
    const fs::path dir = fs::path(TF_SOURCE_DIR_FOR_TESTS) / "models" / "tinycode";
    for (const char* file : {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                             "tokenizer_config.json"}) {
        EXPECT_TRUE(fs::is_regular_file(dir / file)) << file;
    }
    EXPECT_EQ(fs::file_size(dir / "model.safetensors"), 31482192u);
}

TEST(EmbeddedModel, TheBuiltExecutableFindsIt) {
    const char* binary = std::getenv("TF_BINARY");
    ASSERT_NE(binary, nullptr) << "ctest sets TF_BINARY";
    auto found = find_default_model_dir(binary);
    ASSERT_TRUE(found);
    EXPECT_TRUE(fs::is_regular_file(*found / "model.safetensors"));
}

}  // namespace
}  // namespace tf::config
