#include "recall/record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include "recall/dedupe.h"
#include "recall/private_files.h"

namespace tf::recall {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Creates `path` and any missing parent with mode 0700, so only the server's
// user can enter the record (docs/recall.md, "Privacy"). An existing
// directory keeps its mode.
void make_directories(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            throw RecallError("recall: " + path + " exists and is not a directory; pass another --recall-dir");
        }
        return;
    }
    size_t slash = path.find_last_of('/');
    if (slash != std::string::npos && slash > 0) make_directories(path.substr(0, slash));
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
        throw RecallError("recall: cannot create the directory " + path + ": " + errno_text(errno) +
                          "; pass another --recall-dir");
    }
    ::chmod(path.c_str(), 0700);  // whatever the umask
}

// "0 B", "6.0 KiB", "16.0 MiB", "2.0 GiB".
std::string human_bytes(uint64_t bytes) {
    char text[32];
    if (bytes < 1024) {
        std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
    } else if (bytes < (uint64_t{1} << 20)) {
        std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024);
    } else if (bytes < (uint64_t{1} << 30)) {
        std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    } else {
        std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
    }
    return text;
}

void advise_will_need(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
    ::close(fd);
}

void validate_options(const RecordOptions& options) {
    validate(options.tokenizer);
    if (!std::has_single_bit(options.chunk_ids) || options.chunk_ids < 64 || options.chunk_ids > kChunkIds) {
        throw RecallError("recall: chunk_ids " + std::to_string(options.chunk_ids) +
                          " is not a power of two from 64 to 1048576");
    }
    if (options.capacity_bytes < uint64_t{4} * options.chunk_ids) {
        throw RecallError("recall: --recall-gib is smaller than one chunk file (" +
                          human_bytes(uint64_t{4} * options.chunk_ids) + ")");
    }
}

}  // namespace

std::string Record::default_directory(const TokenizerIdentity& tokenizer, const std::string& home) {
    if (home.empty()) throw RecallError("recall: $HOME is not set; pass --recall-dir");
    // With no --recall-dir, the record goes under the user's cache directory,
    // in a subdirectory keyed by the tokenizer digest (docs/recall.md, "Flags").
    return home + "/.cache/tensorfold/recall/tokenizer-" + tokenizer.digest_hex.substr(0, 16);
}

Record::Record(RecordOptions options)
    : options_(std::move(options)),
      index_(options_.chunk_ids, Index::key_table_bytes_for(options_.capacity_bytes)),
      appender_(options_.fs.write) {
    max_chunks_ = options_.capacity_bytes / (uint64_t{4} * options_.chunk_ids);
}

Record::~Record() = default;

std::unique_ptr<Record> Record::open(RecordOptions options) {
    validate_options(options);
    if (options.home.empty()) {
        const char* home = std::getenv("HOME");
        options.home = home ? home : "";
    }
    std::unique_ptr<Record> record(new Record(std::move(options)));
    record->open_directory();
    return record;
}

std::string Record::chunk_path(uint64_t sequence) const { return dir_ + "/" + chunk_file_name(sequence); }

void Record::open_directory() {
    dir_ = options_.dir.empty() ? default_directory(options_.tokenizer, options_.home) : options_.dir;
    if (options_.dir.empty() && options_.legacy_tokenizer) {
        // A record an earlier tensorfold started under the old digest's name
        // stays in use rather than being left behind for an empty one.
        const std::string legacy = default_directory(*options_.legacy_tokenizer, options_.home);
        std::error_code ec;
        if (!std::filesystem::exists(dir_, ec) && std::filesystem::exists(legacy, ec)) dir_ = legacy;
    }
    while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();

    // The directory is checked before anything in it is created, locked or
    // read: a link, another user's directory or one open to others is
    // refused (private_files.h).
    bool writer = false;
    if (options_.read_only) {
        state_ = RecallState::read_only;
        if (!check_private_directory(dir_)) return;  // nothing recorded yet; create nothing
    } else {
        if (!check_private_directory(dir_)) {
            make_directories(dir_);
            check_private_directory(dir_);
        }
        writer = lock_.try_lock(dir_) == DirectoryLock::Outcome::held;
        state_ = writer ? RecallState::writing : RecallState::following;
    }

    // Identity first: never index chunk files written by another tokenizer.
    std::vector<ChunkFileInfo> files = list_chunk_files(dir_);
    std::optional<RecordIdentity> identity = read_identity(dir_);
    if (identity && options_.legacy_tokenizer && identity->tokenizer == *options_.legacy_tokenizer) {
        // Written by this tokenizer under its v1 digest: the writer brings the
        // identity up to date; readers take it as it is.
        if (writer) write_identity(dir_, RecordIdentity{options_.tokenizer, identity->model});
    } else if (identity) {
        check_same_tokenizer(dir_, *identity, options_.tokenizer);
    } else if (!files.empty()) {
        throw RecallError("recall: " + dir_ + " holds chunk files but no identity file, so they cannot be attributed "
                          "to a tokenizer. Delete the directory " + dir_ +
                          " to start a fresh record there, or pass another --recall-dir");
    } else if (writer) {
        write_identity(dir_, RecordIdentity{options_.tokenizer, options_.model});
    }

    load_chunks(writer);
    if (writer && state_ == RecallState::writing) probe_free_space_locked();
}

void Record::load_chunks(bool writer) {
    std::vector<ChunkFileInfo> files = list_chunk_files(dir_);
    if (!files.empty()) next_sequence_ = files.back().sequence + 1;
    const uint64_t chunk_bytes = uint64_t{4} * options_.chunk_ids;
    // Every chunk file is checked before any is read, trimmed or deleted, so
    // a refused record is left exactly as it was found.
    for (const ChunkFileInfo& file : files) {
        if (auto problem = access_problem(file.mode, file.owner, ::geteuid(), RecordEntry::file, file.path)) {
            throw RecallError("recall: refusing the record file " + file.path + ": it " + *problem);
        }
    }
    std::vector<ChunkFileInfo> nonempty;
    for (const ChunkFileInfo& file : files) {
        if (file.bytes > chunk_bytes) {
            if (!writer) continue;  // not ours to judge; the writer refuses it
            throw RecallError("recall: " + file.path + " holds " + std::to_string(file.bytes) +
                              " bytes, more than a chunk file's " + std::to_string(chunk_bytes) +
                              "; it was not written by this tensorfold. Remove it or pass another --recall-dir");
        }
        if (file.bytes >= 4) {
            nonempty.push_back(file);
        } else if (writer) {
            // Created and never written (a crash between open and write(2)), or
            // only a torn id: it holds nothing.
            options_.fs.unlink(file.path);
        }
    }
    // The writer deletes oldest chunk files until the record fits the budget,
    // which matters when --recall-gib shrank since the record was written
    // (docs/recall.md, "Sizing"). Readers load the
    // newest chunks that fit and delete nothing.
    size_t first = nonempty.size() > max_chunks_ ? nonempty.size() - max_chunks_ : 0;
    for (size_t i = 0; writer && i < first; ++i) {
        if (options_.fs.unlink(nonempty[i].path) != 0 && errno != ENOENT) {
            last_error_ = "cannot delete " + nonempty[i].path + ": " + errno_text(errno);
            state_ = RecallState::paused_delete;
        } else {
            ++chunks_evicted_;
        }
    }
    // Reading from disk overlaps indexing: the kernel reads every file ahead
    // while the ones before it are indexed.
    for (size_t i = first; i < nonempty.size(); ++i) advise_will_need(nonempty[i].path);
    std::unique_ptr<uint32_t[]> buffer = std::make_unique_for_overwrite<uint32_t[]>(options_.chunk_ids);
    for (size_t i = first; i < nonempty.size(); ++i) {
        ChunkRead read = read_chunk_file(nonempty[i].path, buffer.get(), options_.chunk_ids, /*repair=*/writer);
        if (read.vanished || read.ids == 0) continue;
        index_.begin_chunk(nonempty[i].sequence);
        index_.append(buffer.get(), read.ids);
    }
    // Appends go to the newest chunk while it has room.
    if (writer && !index_.empty() && index_.newest_size() < options_.chunk_ids &&
        index_.newest_sequence() == next_sequence_ - 1) {
        std::string error;
        if (!appender_.open(chunk_path(index_.newest_sequence()), index_.newest_size(), &error)) {
            throw RecallError("recall: " + error + "; pass another --recall-dir");
        }
    }
}

RecallState Record::state() const {
    std::shared_lock lock(mutex_);
    return state_;
}

void Record::probe_free_space_locked() {
    if (state_ != RecallState::writing && state_ != RecallState::paused_disk) return;
    std::optional<uint64_t> free_bytes = options_.fs.free_bytes(dir_);
    if (!free_bytes) {
        last_error_ = "cannot measure the free space of " + dir_ + ": " + errno_text(errno);
        return;  // unknown is not full: keep the state
    }
    // Under the free-space floor (4 GiB by default) adds pause; serving is not
    // affected (docs/recall.md, "States", `paused-disk`).
    state_ = *free_bytes < options_.min_free_bytes ? RecallState::paused_disk : RecallState::writing;
}

RecallState Record::refresh_disk_state() {
    std::unique_lock lock(mutex_);
    probe_free_space_locked();
    return state_;
}

bool Record::start_chunk_locked(AddResult* result) {
    appender_.close();
    if (index_.chunk_count() >= max_chunks_) {
        // Full budget: evict the oldest chunk (docs/recall.md, "Sizing"). The file
        // goes first, then its ids leave the index.
        const std::string path = chunk_path(index_.oldest_sequence());
        if (options_.fs.unlink(path) != 0 && errno != ENOENT) {
            last_error_ = "cannot delete " + path + ": " + errno_text(errno);
            result->error = last_error_;
            // A chunk that will not go blocks all further adds until a DELETE
            // succeeds in removing every chunk file (docs/recall.md, "States").
            state_ = RecallState::paused_delete;
            return false;
        }
        index_.evict_oldest();
        ++chunks_evicted_;
        ++result->chunks_evicted;
    }
    std::string error;
    if (!appender_.open(chunk_path(next_sequence_), 0, &error)) {
        last_error_ = error;
        result->error = error;
        state_ = RecallState::paused_disk;
        return false;
    }
    ++next_sequence_;
    return true;
}

bool Record::append_piece_locked(std::span<const uint32_t> ids, AddResult* result) {
    // A separator before the piece unless the record already ends in one (or
    // is empty): no match crosses from the previous segment into this one.
    std::vector<uint32_t> buffer;
    buffer.reserve(ids.size() + 1);
    if (index_.last_id() != kSeparator) buffer.push_back(kSeparator);
    buffer.insert(buffer.end(), ids.begin(), ids.end());

    const uint64_t chunk_ids = options_.chunk_ids;
    size_t done = 0;
    while (done < buffer.size()) {
        if (!appender_.is_open() || appender_.ids() == chunk_ids) {
            if (!start_chunk_locked(result)) return false;
        }
        const uint64_t n = std::min<uint64_t>(chunk_ids - appender_.ids(), buffer.size() - done);
        const uint64_t sequence = next_sequence_ - 1;
        std::string error;
        bool out_of_space = false;
        if (!appender_.append(buffer.data() + done, n, &error, &out_of_space)) {
            last_error_ = error;
            result->error = error;
            state_ = RecallState::paused_disk;  // resumes when refresh_disk_state() finds space
            return false;
        }
        // On disk now; only now into memory and the index.
        if (index_.empty() || index_.newest_sequence() != sequence) index_.begin_chunk(sequence);
        index_.append(buffer.data() + done, n);
        done += n;
    }
    return true;
}

AddResult Record::add(std::span<const uint32_t> ids) {
    std::unique_lock lock(mutex_);
    AddResult result;
    probe_free_space_locked();
    result.state = state_;
    if (state_ != RecallState::writing) {
        ++adds_skipped_;
        return result;  // read-only, following, paused: add nothing
    }
    result.accepted = true;
    ++adds_;

    size_t begin = 0;
    while (begin < ids.size() && state_ == RecallState::writing) {
        size_t end = begin;
        while (end < ids.size() && ids[end] != kSeparator) ++end;
        std::span<const uint32_t> run = ids.subspan(begin, end - begin);
        AddPlan plan = plan_add(index_, run);
        result.ids_held += plan.held_ids;
        result.ids_short += plan.short_ids;
        for (const AddPlan::Piece& piece : plan.pieces) {
            if (!append_piece_locked(run.subspan(piece.begin, piece.end - piece.begin), &result)) break;
            result.ids_written += piece.end - piece.begin;
        }
        begin = end + 1;
    }
    ids_written_ += result.ids_written;
    ids_held_ += result.ids_held;
    ids_short_ += result.ids_short;
    result.state = state_;
    return result;
}

Match Record::lookup(std::span<const uint32_t> context_tail, uint32_t max_len) const {
    std::shared_lock lock(mutex_);
    lookups_.fetch_add(1, std::memory_order_relaxed);
    Match match = index_.lookup(context_tail, max_len);
    if (match.length > 0) lookup_hits_.fetch_add(1, std::memory_order_relaxed);
    return match;
}

EraseResult Record::erase_all() {
    std::unique_lock lock(mutex_);
    EraseResult result;
    // Only the writing server may delete; read-only and following servers
    // get a refusal, which the route turns into 409 (docs/recall.md, "DELETE").
    if (!owns_record(state_)) {
        result.outcome = EraseResult::Outcome::refused;
        result.message = state_ == RecallState::read_only
                             ? "the record is read-only (--recall-read-only); it cannot be deleted by this server"
                             : "another server writes the record in " + dir_ + "; delete it there";
        return result;
    }
    appender_.close();
    // Remove all chunk files, then clear the in-memory index, the landing
    // statistics and every counter. `identity` and `lock` are kept: neither
    // contains token ids (docs/recall.md, "DELETE").
    std::vector<std::string> failures;
    try {
        for (const ChunkFileInfo& file : list_chunk_files(dir_)) {
            if (options_.fs.unlink(file.path) != 0 && errno != ENOENT) {
                if (failures.empty()) result.message = "cannot delete " + file.path + ": " + errno_text(errno);
                failures.push_back(file.path);
            }
        }
    } catch (const RecallError& error) {
        failures.push_back(dir_);
        result.message = error.what();
    }
    index_.clear();
    offers_.reset();
    adds_ = adds_skipped_ = ids_written_ = ids_held_ = ids_short_ = chunks_evicted_ = 0;
    lookups_ = 0;
    lookup_hits_ = 0;
    if (!failures.empty()) {
        // Partial failure: report the first file left behind (the route answers
        // 500 with its name) and stop adding until a later DELETE clears every
        // chunk file (docs/recall.md, "DELETE" and "States").
        result.outcome = EraseResult::Outcome::failed;
        result.failed_file = failures.front();
        if (failures.size() > 1) result.message += " (and " + std::to_string(failures.size() - 1) + " more chunk files)";
        last_error_ = result.message;
        state_ = RecallState::paused_delete;
        return result;
    }
    last_error_.clear();
    state_ = RecallState::writing;
    probe_free_space_locked();
    result.message = "deleted every chunk file in " + dir_;
    return result;
}

RecordStats Record::stats() const {
    std::shared_lock lock(mutex_);
    RecordStats s;
    s.state = state_;
    s.dir = dir_;
    s.capacity_bytes = options_.capacity_bytes;
    s.disk_bytes = index_.ids() * 4;
    s.memory_bytes = index_.memory_bytes();
    s.chunk_memory_bytes = index_.chunk_memory_bytes();
    s.key_table_bytes = index_.key_table_bytes();
    s.chunks = index_.chunk_count();
    s.ids = index_.ids();
    s.token_ids = index_.ids() - index_.separators();
    s.adds = adds_;
    s.adds_skipped = adds_skipped_;
    s.ids_written = ids_written_;
    s.ids_held = ids_held_;
    s.ids_short = ids_short_;
    s.chunks_evicted = chunks_evicted_;
    s.lookups = lookups_.load(std::memory_order_relaxed);
    s.lookup_hits = lookup_hits_.load(std::memory_order_relaxed);
    s.landing = offers_.snapshot();
    s.last_error = last_error_;
    return s;
}

std::string Record::summary() const {
    RecordStats s = stats();
    return std::string(to_string(s.state)) + ", " + s.dir + ": " + human_bytes(s.disk_bytes) + " on disk in " +
           std::to_string(s.chunks) + (s.chunks == 1 ? " chunk, " : " chunks, ") + human_bytes(s.memory_bytes) +
           " in memory";
}

}  // namespace tf::recall
