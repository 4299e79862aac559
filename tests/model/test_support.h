// Helpers shared by the model tests: temp directories, the embedded model's
// path, the oracle file, and running a backend over token sequences.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <cstring>
#include <unistd.h>
#include <string>
#include <vector>

#include "model/backend.h"
#include "model/load_error.h"
#include "model/model_config.h"

namespace tf::model::testing {

// parse_model_config refuses `text` with a LoadError naming DIR/config.json
// and holding `needle`.
inline void expect_load_error(const std::string& text, const std::string& needle) {
    try {
        parse_model_config(text, "DIR/config.json");
        FAIL() << "accepted: " << text;
    } catch (const LoadError& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("DIR/config.json"), std::string::npos) << e.what();
    }
}

inline std::string source_dir() { const char* env = std::getenv("TF_SOURCE_DIR"); return env && *env ? env : TF_SOURCE_DIR_FOR_TESTS; }
inline std::string tinycode_dir() { return source_dir() + "/models/tinycode"; }
inline std::string fixture_path(const std::string& name) { return source_dir() + "/tests/fixtures/" + name; }

// A fresh directory under the system temp dir, removed with the object.
class TempDir {
public:
    TempDir() {
        std::random_device rd;
        path_ = std::filesystem::temp_directory_path() /
                ("tf_model_test_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }
    std::string str() const { return path_.string(); }

private:
    std::filesystem::path path_;
};

inline std::vector<int32_t> random_tokens(int32_t count, int32_t vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> pick(0, vocab - 1);
    std::vector<int32_t> tokens(static_cast<size_t>(count));
    for (auto& t : tokens) t = pick(rng);
    return tokens;
}

// Feeds `tokens` to a fresh stream in forwards of the given chunk sizes
// (cycled), every row asking for logits; returns all logits, token by token.
inline std::vector<float> logits_in_chunks(Backend& backend, StreamId stream, const std::vector<int32_t>& tokens,
                                           const std::vector<int32_t>& chunks) {
    const size_t vocab = static_cast<size_t>(backend.config().vocab_size);
    backend.open_stream(stream, static_cast<int32_t>(tokens.size()) + 1);
    std::vector<float> all, logits;
    size_t at = 0, chunk = 0;
    while (at < tokens.size()) {
        const size_t n = std::min(tokens.size() - at, static_cast<size_t>(chunks[chunk++ % chunks.size()]));
        std::vector<Row> rows;
        for (size_t i = 0; i < n; ++i) rows.push_back({stream, static_cast<int32_t>(at + i), tokens[at + i], true});
        backend.forward(rows, logits);
        EXPECT_EQ(logits.size(), n * vocab);
        all.insert(all.end(), logits.begin(), logits.end());
        at += n;
    }
    backend.close_stream(stream);
    return all;
}

// Bitwise equality of two float arrays, reporting the first difference.
inline ::testing::AssertionResult bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " vs " << b.size();
    if (std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0) return ::testing::AssertionSuccess();
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            return ::testing::AssertionFailure() << "first difference at " << i << ": " << a[i] << " vs " << b[i];
        }
    }
    return ::testing::AssertionFailure();
}

}  // namespace tf::model::testing
