// The record's loader (recall/record.h, chunk_file.h) reads chunk files that
// sit in a directory across restarts, crashes and other servers: torn tails,
// oversized files, separators anywhere, ids past any vocabulary. Opening a
// record must either refuse with a RecallError or give a record whose
// lookups and adds work; read-only opening must leave the files untouched.
//
// Input layout: the first byte's low two bits say how many chunk files (1-4)
// the rest is cut into, in equal parts (the last takes the remainder). The
// identity parser gets the whole input as text too: it reads a file from the
// same directory.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "recall/identity.h"
#include "recall/record.h"

namespace {

using namespace tf::recall;

constexpr uint32_t kFuzzChunkIds = 64;  // small chunks, so inputs span several and overflow one

RecordOptions fuzz_options(const std::string& dir, bool read_only) {
    RecordOptions options;
    options.dir = dir;
    options.read_only = read_only;
    options.chunk_ids = kFuzzChunkIds;
    options.capacity_bytes = uint64_t{4} * kFuzzChunkIds * 3;  // four files given, three kept
    options.model = "fuzz";
    options.tokenizer = {"0123456789abcdef0123456789abcdef", 32000};
    options.fs.free_bytes = [](const std::string&) -> std::optional<uint64_t> { return uint64_t{1} << 40; };
    return options;
}

// One record directory for the whole run, its identity written once; each
// input replaces the chunk files in it.
std::string& temp_root() {
    static std::string root;
    return root;
}

const std::string& record_dir() {
    static const std::string dir = [] {
        char pattern[] = "/tmp/tf-chunk-fuzz-XXXXXX";
        if (!::mkdtemp(pattern)) std::abort();
        temp_root() = pattern;
        // Every replay in ctest makes one; none should outlive its run.
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(temp_root(), ignored);
        });
        const std::string made = temp_root() + "/record";
        Record::open(fuzz_options(made, false));
        return made;
    }();
    return dir;
}

// Mode 0600 as the record's own writer makes them: the loader refuses chunk
// files that group or others may read, and the fuzzer is after what lies
// beyond that check.
void write_file(const std::string& path, const uint8_t* data, size_t size) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ::fchmod(fd, 0600) != 0) std::abort();
    size_t done = 0;
    while (done < size) {
        const ssize_t n = ::write(fd, data + done, size - done);
        if (n <= 0) std::abort();
        done += static_cast<size_t>(n);
    }
    ::close(fd);
}

std::vector<uint32_t> ids_of(const uint8_t* data, size_t size) {
    std::vector<uint32_t> ids(size / 4);
    if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * 4);
    return ids;
}

void exercise(Record& record, const std::vector<uint32_t>& ids) {
    const size_t tail = std::min<size_t>(ids.size(), 32);
    const Match match = record.lookup(std::span(ids).last(tail), 16);
    if (match.continuation.size() > 16) std::abort();
    if (record.state() == RecallState::writing) record.add(std::span(ids).first(std::min<size_t>(ids.size(), 40)));
    (void)record.stats();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string problem;
    (void)parse_identity(std::string(reinterpret_cast<const char*>(data), size), &problem);
    if (size == 0) return 0;

    const std::string& dir = record_dir();
    for (const ChunkFileInfo& old : list_chunk_files(dir)) ::unlink(old.path.c_str());
    const size_t files = (data[0] & 3u) + 1;
    const uint8_t* body = data + 1;
    const size_t body_size = size - 1;
    const size_t part = body_size / files;
    std::vector<std::string> paths;
    for (size_t i = 0; i < files; ++i) {
        const size_t begin = i * part;
        const size_t end = i + 1 == files ? body_size : begin + part;
        paths.push_back(dir + "/" + chunk_file_name(i + 1));
        write_file(paths.back(), body + begin, end - begin);
    }
    const std::vector<uint32_t> ids = ids_of(body, body_size);

    std::vector<uintmax_t> sizes_before;
    for (const std::string& path : paths) sizes_before.push_back(std::filesystem::file_size(path));
    try {
        std::unique_ptr<Record> reader = Record::open(fuzz_options(dir, true));
        exercise(*reader, ids);
    } catch (const RecallError&) {
    }
    for (size_t i = 0; i < paths.size(); ++i) {
        if (std::filesystem::file_size(paths[i]) != sizes_before[i]) std::abort();  // a reader changed a file
    }
    try {
        std::unique_ptr<Record> writer = Record::open(fuzz_options(dir, false));
        exercise(*writer, ids);
    } catch (const RecallError&) {
    }
    return 0;
}
