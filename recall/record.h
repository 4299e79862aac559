// Record: the recall record of one server. The facade over the directory,
// its identity and lock, the chunk files, the index and the offer policy.
//
// The record collects the token ids of prompts and replies this server handled
// and lets streams draft copies from them (docs/recall.md, introduction).
//
// On disk (docs/recall.md, "On disk"), in one directory (mode 0700):
//   chunk-000000000001.ids ...  up to 1,048,576 uint32 little-endian ids each
//                               (4 MiB, mode 0600); order of names = age
//   identity                    the tokenizer that wrote the record (identity.h)
//   lock                        empty; flock'ed by the writing server
// Segments: every appended piece starts after a separator id (kSeparator,
// chunk_file.h), so no match crosses from one piece into the next.
//
// States (state.h): writing; read-only (--recall-read-only: nothing is
// created, locked, repaired or added); following (another server holds the
// lock: the record as it was at open, nothing added, DELETE refused);
// paused-disk (under min_free_bytes free: adds stop, lookups go on, adds
// resume once space returns); paused-delete (a chunk file could not be
// deleted: adds stop until a DELETE deletes every chunk file).
//
// Append ordering, per add: (1) the free-space probe; (2) per piece, per
// chunk file touched: when the newest chunk is full, the oldest chunk file is
// unlinked first if the record is at --recall-gib, then its memory freed;
// the new file is created; (3) one write(2) of the whole buffer for that
// file; (4) only then the ids are copied to memory and indexed. So memory
// never holds an id the disk lacks, and a kill -9 loses at most the append
// being written (chunk_file.h).
//
// Thread-safety: every member function is thread-safe. lookup() and stats()
// take a shared lock and run concurrently with each other (the reader
// actors); add(), erase_all() and refresh_disk_state() take the exclusive
// lock (one writer actor), and a waiting writer goes before new readers
// (rw_lock.h). offers() is internally locked.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>

#include "recall/chunk_file.h"
#include "recall/directory_lock.h"
#include "recall/fs_ops.h"
#include "recall/identity.h"
#include "recall/index.h"
#include "recall/policy.h"
#include "recall/rw_lock.h"
#include "recall/state.h"

namespace tf::recall {

inline constexpr uint64_t kDefaultCapacityBytes = uint64_t{64} << 20;  // seed: "1/16 GiB (64 MiB) by default"
inline constexpr uint64_t kDefaultMinFreeBytes = uint64_t{4} << 30;    // seed: "under 4 GiB free"

struct RecordOptions {
    std::string dir;  // --recall-dir; empty: default_directory(tokenizer, home)
    uint64_t capacity_bytes = kDefaultCapacityBytes;  // --recall-gib in bytes (RecallConfig::disk_bytes())
    bool read_only = false;                           // --recall-read-only
    std::string model;                                // the served model, for a new identity
    TokenizerIdentity tokenizer;
    // The same tokenizer's identity as tensorfold computed it before
    // identities became what a GGUF and its Hugging Face original share
    // (tokenizer/identity.h, v1). A record that names it is this
    // tokenizer's: its identity file is rewritten to `tokenizer` by the
    // writer, and without --recall-dir its old default directory is used.
    std::optional<TokenizerIdentity> legacy_tokenizer;
    FsOps fs = FsOps::real();
    uint64_t min_free_bytes = kDefaultMinFreeBytes;
    std::string home;                // empty: $HOME
    uint32_t chunk_ids = kChunkIds;  // tests only: a smaller power of two
};

struct AddResult {
    bool accepted = false;  // false: this state adds nothing (see state)
    RecallState state = RecallState::off;
    uint64_t ids_written = 0;     // token ids written (new ids, and context ids of held runs)
    uint64_t ids_held = 0;        // not added: the record already holds them
    uint64_t ids_short = 0;       // not added: in a piece too short to ever match
    uint64_t chunks_evicted = 0;  // oldest chunk files deleted to stay within --recall-gib
    std::string error;            // why the add stopped early, naming the file
};

// DELETE /v1/recall.
struct EraseResult {
    enum class Outcome {
        erased,   // every chunk file deleted (HTTP 200)
        refused,  // read-only or following (HTTP 409)
        failed,   // a chunk file could not be deleted (HTTP 500 naming it)
    };
    Outcome outcome = Outcome::erased;
    std::string failed_file;  // the first chunk file that could not be deleted
    std::string message;
    bool ok() const { return outcome == Outcome::erased; }
};

struct RecordStats {
    RecallState state = RecallState::off;
    std::string dir;
    uint64_t capacity_bytes = 0;
    uint64_t disk_bytes = 0;          // bytes of the chunk files: 4 × ids
    uint64_t memory_bytes = 0;        // chunk_memory_bytes × chunks + key_table_bytes
    uint64_t chunk_memory_bytes = 0;  // 8 MiB
    uint64_t key_table_bytes = 0;
    uint64_t chunks = 0;
    uint64_t ids = 0;        // stored ids, separators included
    uint64_t token_ids = 0;  // of which token ids
    // Since open or the last DELETE:
    uint64_t adds = 0;
    uint64_t adds_skipped = 0;  // finished requests not added: the state was not writing
    uint64_t ids_written = 0;
    uint64_t ids_held = 0;
    uint64_t ids_short = 0;
    uint64_t chunks_evicted = 0;
    uint64_t lookups = 0;
    uint64_t lookup_hits = 0;
    LandingSnapshot landing;  // copies offered, tokens drafted and landed
    std::string last_error;   // the last failure (write, delete, free-space probe)
};

class Record {
   public:
    // Opens (and for a writer creates) the record. Throws RecallError when the
    // server must refuse to start on the directory: a different tokenizer, a
    // missing or corrupt identity beside chunk files, an unusable directory.
    static std::unique_ptr<Record> open(RecordOptions options);

    // ~/.cache/tensorfold/recall/tokenizer-<first 16 digest digits>. Throws
    // RecallError when home is empty.
    static std::string default_directory(const TokenizerIdentity& tokenizer, const std::string& home);

    ~Record();
    Record(const Record&) = delete;
    Record& operator=(const Record&) = delete;

    RecallState state() const;
    const std::string& dir() const { return dir_; }

    // Adds one run of ids (a request's new prompt part followed by its reply)
    // after dedupe (dedupe.h). A kSeparator inside `ids` splits it.
    AddResult add(std::span<const uint32_t> ids);

    // The longest earlier match (16 ids or more) of the stream's last ids,
    // most recent on ties, and up to max_len ids of its continuation.
    Match lookup(std::span<const uint32_t> context_tail, uint32_t max_len) const;

    // DELETE /v1/recall: deletes every chunk file, empties the index, the
    // landing rates and the counters. Directory, identity and lock stay.
    EraseResult erase_all();

    // Probes free space: writing <-> paused-disk. Returns the state.
    RecallState refresh_disk_state();

    RecordStats stats() const;
    // "writing, /dir: 12.0 MiB on disk in 3 chunks, 32.0 MiB in memory".
    std::string summary() const;

    // The record-wide offer policy (thread-safe).
    SharedOfferPolicy& offers() { return offers_; }

   private:
    explicit Record(RecordOptions options);
    void open_directory();
    void load_chunks(bool writer);
    void probe_free_space_locked();
    bool append_piece_locked(std::span<const uint32_t> ids, AddResult* result);
    bool start_chunk_locked(AddResult* result);
    std::string chunk_path(uint64_t sequence) const;

    RecordOptions options_;
    std::string dir_;
    uint64_t max_chunks_ = 1;

    mutable WriterPreferringLock mutex_;
    RecallState state_ = RecallState::off;
    DirectoryLock lock_;
    Index index_;
    ChunkAppender appender_;
    uint64_t next_sequence_ = 1;
    std::string last_error_;
    uint64_t adds_ = 0, adds_skipped_ = 0, ids_written_ = 0, ids_held_ = 0, ids_short_ = 0, chunks_evicted_ = 0;
    mutable std::atomic<uint64_t> lookups_{0};
    mutable std::atomic<uint64_t> lookup_hits_{0};
    SharedOfferPolicy offers_;
};

}  // namespace tf::recall
