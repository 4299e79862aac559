// Chunk files: the record's token ids on disk.
//
// Only ids are stored, no text: each chunk file holds at most 2^20 ids
// (4 MiB), all chunk files live in one directory created 0700, and every file
// is created 0600 (docs/recall.md, "On disk" and "Privacy").
//
// A chunk file is a flat array of uint32 little-endian ids, nothing else: no
// header, no text. Its name is chunk-<12-digit sequence number>.ids; the
// sequence number grows by one per new chunk, so sorting the names sorts the
// files by age and the oldest is deleted first.
//
// One id value is reserved: kSeparator (0xFFFFFFFF, never a token id of any
// vocabulary) is written before each appended run whose predecessor is not
// already a separator. It marks segment boundaries: no index key spans it, no
// match extends across it and no continuation runs past it, so nothing is
// ever drafted across from one request's ids into the next's. Files still hold
// nothing but uint32 ids.
//
// Crash safety: an append is one write(2) of the whole buffer per chunk file
// it touches (a buffer never spans two files), to a descriptor opened with
// O_APPEND. A kill -9 can only cut the append being written: earlier bytes are
// already in the page cache and survive the process. A tail whose size is not
// a multiple of 4 (an id cut in half) is cut back when the writer opens the
// record. No fsync: the record survives a crashed process, not a crashed
// machine (losing recent ids costs speed, never correctness).
//
// Free functions are thread-safe; a ChunkAppender is used by one thread.
#pragma once

#include <sys/types.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tf::recall {

static_assert(std::endian::native == std::endian::little,
              "chunk files are little-endian uint32 arrays written and read without conversion");

// Capacity of one chunk file: 2^20 ids, 4 MiB (docs/recall.md, "On disk"). Equal to
// config::kRecallChunkIds (checked by tests/recall; recall/ depends on nothing).
inline constexpr uint32_t kChunkIds = 1u << 20;
inline constexpr uint32_t kSeparator = 0xFFFFFFFFu;

// "chunk-000000000001.ids" for sequence number 1.
std::string chunk_file_name(uint64_t sequence);
// The sequence number of a chunk file name, or nullopt for any other name.
std::optional<uint64_t> parse_chunk_file_name(std::string_view name);

struct ChunkFileInfo {
    uint64_t sequence = 0;
    std::string path;
    uint64_t bytes = 0;
    uint32_t mode = 0;   // st_mode of the file itself (lstat)
    uint32_t owner = 0;  // st_uid
};

// Every chunk file in `dir`, oldest first. Throws RecallError when the
// directory cannot be listed or a chunk name is not a regular file (a
// symbolic link is named as one).
std::vector<ChunkFileInfo> list_chunk_files(const std::string& dir);

struct ChunkRead {
    uint64_t ids = 0;         // ids now in `out`
    uint64_t torn_bytes = 0;  // bytes past the last whole id (cut back when repair)
    bool vanished = false;    // the file was gone (deleted by the writer meanwhile)
};

// Reads up to max_ids ids of `path` into `out`. With `repair` (the writer), a
// torn tail is cut back with ftruncate(2); without it (a read-only or
// following server, which must not touch another server's files) the partial
// id is ignored. Throws RecallError when the file cannot be read, is a
// symbolic link, belongs to another user or lets group or others in
// (private_files.h): it was not left there by this server.
ChunkRead read_chunk_file(const std::string& path, uint32_t* out, uint64_t max_ids, bool repair);

// Appends whole buffers of ids to one chunk file.
class ChunkAppender {
   public:
    // write(2), or a test's faulty version of it (fs_ops.h).
    using WriteFn = std::function<ssize_t(int fd, const void* data, size_t bytes)>;

    ChunkAppender() = default;
    explicit ChunkAppender(WriteFn write) : write_(std::move(write)) {}
    ~ChunkAppender();
    ChunkAppender(const ChunkAppender&) = delete;
    ChunkAppender& operator=(const ChunkAppender&) = delete;

    // Opens `path` for appending, creating it with mode 0600 when missing.
    // `ids` is how many ids it holds. False with `error` set on failure.
    bool open(const std::string& path, uint64_t ids, std::string* error);
    // Appends n ids with write(2) (repeated only when the kernel writes part of
    // the buffer). On failure the file is cut back to its previous size, so
    // disk and memory agree, and `error` names the file and errno;
    // *out_of_space is set for ENOSPC / EDQUOT.
    bool append(const uint32_t* ids, uint64_t n, std::string* error, bool* out_of_space);
    void close();

    bool is_open() const { return fd_ >= 0; }
    const std::string& path() const { return path_; }
    uint64_t ids() const { return ids_; }

   private:
    WriteFn write_;  // empty: ::write
    int fd_ = -1;
    std::string path_;
    uint64_t ids_ = 0;
};

}  // namespace tf::recall
