// Test seams: faulty chunk writes and a fake free-space reading for the real
// `tensorfold serve`, so that end-to-end tests can drive the disk faults of
// docs/security.md against the real binary. They are switched on only by
// environment variables whose names start with TF_TEST_, which no deployment
// sets; the server logs a warning naming each one it finds.
//
//   TF_TEST_RECALL_WRITE_FAULTS=N:FAULT[,N:FAULT...]
//       Counts the write(2) calls made for chunk appends, from 1. The Nth
//       writes only part of its bytes, ending inside an id, and returns that
//       short count. FAULT then says what comes next:
//         ENOSPC, EIO, EDQUOT  the next call (the one that would finish the
//                              append) fails with that errno, writing nothing
//         SIGKILL              the process kills itself at once, as kill -9
//                              in the middle of an append would
//       Each fault fires once; later writes are real.
//   TF_TEST_RECALL_FREE_BYTES_FILE=PATH
//       Every free-space probe reads PATH, a decimal byte count, instead of
//       calling statvfs(3). A missing or malformed file is a failed probe
//       (errno set), reported as such, never a silent fallback.
//
// The parsers are pure and thread-safe; the FsOps they build may be called
// from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recall/fs_ops.h"

namespace tf::recall {

inline constexpr const char* kWriteFaultsVariable = "TF_TEST_RECALL_WRITE_FAULTS";
inline constexpr const char* kFreeBytesFileVariable = "TF_TEST_RECALL_FREE_BYTES_FILE";

struct WriteFault {
    uint64_t write_number = 0;  // 1-based, over every chunk write of the process
    int error = 0;              // errno of the call after the short write; 0 with kill
    bool kill = false;          // SIGKILL right after the short write

    bool operator==(const WriteFault&) const = default;
};

// "2:ENOSPC,5:SIGKILL" -> faults in the order given. Throws RecallError naming
// the bad item and the accepted forms.
std::vector<WriteFault> parse_write_faults(std::string_view spec);

// A decimal byte count, surrounding whitespace allowed; nullopt otherwise.
std::optional<uint64_t> parse_free_bytes(std::string_view text);

// How many bytes the faulty write lets through of a `bytes`-long request:
// fewer than asked and never a multiple of 4 when bytes >= 4, so the file
// ends in a torn id exactly as an interrupted append would leave it.
size_t torn_write_bytes(size_t bytes);

// `base` with the seams that `getenv` reports switched on; `active` receives
// one "NAME=value" per seam in use. Throws RecallError on a malformed value.
FsOps with_test_seams(FsOps base, const std::function<const char*(const char*)>& getenv,
                      std::vector<std::string>* active);

}  // namespace tf::recall
