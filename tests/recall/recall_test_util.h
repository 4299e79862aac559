// Helpers for the recall tests: real temporary directories on /tmp, test
// tokenizer identities and distinct runs of ids.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "recall/record.h"

namespace tf::recall::testing {

// A fresh directory under /tmp, removed with everything in it afterwards.
class TempDir {
   public:
    TempDir() {
        char pattern[] = "/tmp/tf-recall-test-XXXXXX";
        char* made = ::mkdtemp(pattern);
        if (!made) std::abort();
        path_ = made;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    // A directory inside this one that does not exist yet.
    std::string sub(const std::string& name) const { return path_ + "/" + name; }

   private:
    std::string path_;
};

inline TokenizerIdentity test_tokenizer() { return {"0123456789abcdef0123456789abcdef", 32000}; }
inline TokenizerIdentity other_tokenizer() { return {"fedcba9876543210fedcba9876543210", 151936}; }

// Options for a writer on `dir` with test-sized chunks: `chunk_ids` ids per
// chunk and room for `chunks` of them; plenty of free space.
inline RecordOptions small_options(const std::string& dir, uint32_t chunk_ids = 1024, uint64_t chunks = 4) {
    RecordOptions options;
    options.dir = dir;
    options.chunk_ids = chunk_ids;
    options.capacity_bytes = uint64_t{4} * chunk_ids * chunks;
    options.model = "test-model";
    options.tokenizer = test_tokenizer();
    options.fs.free_bytes = [](const std::string&) -> std::optional<uint64_t> { return uint64_t{100} << 30; };
    return options;
}

// `n` ids that appear nowhere else: seed * 1,000,003 + i, kept below 2^31.
inline std::vector<uint32_t> distinct_ids(uint32_t seed, size_t n) {
    std::vector<uint32_t> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = static_cast<uint32_t>((uint64_t{seed} * 1000003u + i) % 2147483647u);
    return ids;
}

inline std::vector<uint32_t> concat(std::initializer_list<std::vector<uint32_t>> parts) {
    std::vector<uint32_t> all;
    for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
    return all;
}

inline std::vector<uint32_t> slice(const std::vector<uint32_t>& ids, size_t begin, size_t end) {
    return std::vector<uint32_t>(ids.begin() + static_cast<std::ptrdiff_t>(begin),
                                 ids.begin() + static_cast<std::ptrdiff_t>(end));
}

inline uint32_t file_mode(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return 0;
    return st.st_mode & 07777;
}

inline uint64_t file_size(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return 0;
    return static_cast<uint64_t>(st.st_size);
}

inline bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// The raw uint32 values of a chunk file.
inline std::vector<uint32_t> read_raw(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<uint32_t> ids(bytes.size() / 4);
    std::memcpy(ids.data(), bytes.data(), ids.size() * 4);
    return ids;
}

// Every value in the chunk files of `dir`, oldest file first.
inline std::vector<uint32_t> read_all_chunks(const std::string& dir) {
    std::vector<uint32_t> all;
    for (const ChunkFileInfo& file : list_chunk_files(dir)) {
        std::vector<uint32_t> ids = read_raw(file.path);
        all.insert(all.end(), ids.begin(), ids.end());
    }
    return all;
}

}  // namespace tf::recall::testing
