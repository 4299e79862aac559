#include "recall/identity.h"

#include "recall/private_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tf::recall {
namespace {

constexpr const char* kFileName = "identity";
constexpr const char* kTempName = "identity.tmp";

std::string errno_text(int err) { return std::strerror(err); }

bool is_lower_hex(const std::string& s) {
    for (char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

// Writes all of `text` to fd; false with errno set on failure.
bool write_all(int fd, const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        done += static_cast<size_t>(n);
    }
    return true;
}

}  // namespace

void validate(const TokenizerIdentity& tokenizer) {
    if (tokenizer.digest_hex.size() < 16 || !is_lower_hex(tokenizer.digest_hex)) {
        throw RecallError("recall: the tokenizer digest '" + tokenizer.digest_hex +
                          "' is not a lower-case hex digest of 16 or more digits");
    }
    if (tokenizer.vocab_size == 0) throw RecallError("recall: the tokenizer's vocabulary size is 0");
}

std::string describe(const TokenizerIdentity& tokenizer) {
    return "sha256 " + tokenizer.digest_hex + " (vocabulary " + std::to_string(tokenizer.vocab_size) + ")";
}

std::string format_identity(const RecordIdentity& identity) {
    std::string text;
    text += "# tensorfold recall record: the tokenizer that wrote it\n";
    text += "format 1\n";
    text += "tokenizer_sha256 " + identity.tokenizer.digest_hex + "\n";
    text += "vocab_size " + std::to_string(identity.tokenizer.vocab_size) + "\n";
    text += "model " + identity.model + "\n";
    return text;
}

std::optional<RecordIdentity> parse_identity(const std::string& text, std::string* problem) {
    RecordIdentity identity;
    bool have_format = false, have_digest = false, have_vocab = false, have_model = false;
    std::istringstream lines(text);
    std::string line;
    int line_number = 0;
    auto fail = [&](const std::string& why) {
        if (problem) *problem = why;
        return std::nullopt;
    };
    while (std::getline(lines, line)) {
        ++line_number;
        if (line.empty() || line[0] == '#') continue;
        size_t space = line.find(' ');
        std::string key = line.substr(0, space);
        std::string value = space == std::string::npos ? "" : line.substr(space + 1);
        std::string where = "line " + std::to_string(line_number) + ": ";
        if (key == "format") {
            if (value != "1") return fail(where + "unknown format '" + value + "'");
            have_format = true;
        } else if (key == "tokenizer_sha256") {
            if (value.size() < 16 || !is_lower_hex(value)) return fail(where + "tokenizer_sha256 is not a hex digest");
            identity.tokenizer.digest_hex = value;
            have_digest = true;
        } else if (key == "vocab_size") {
            uint32_t vocab = 0;
            auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), vocab);
            if (ec != std::errc() || end != value.data() + value.size() || vocab == 0) {
                return fail(where + "vocab_size '" + value + "' is not a positive number");
            }
            identity.tokenizer.vocab_size = vocab;
            have_vocab = true;
        } else if (key == "model") {
            identity.model = value;
            have_model = true;
        } else {
            return fail(where + "unknown key '" + key + "'");
        }
    }
    if (!have_format) return fail("no 'format' line");
    if (!have_digest) return fail("no 'tokenizer_sha256' line");
    if (!have_vocab) return fail("no 'vocab_size' line");
    if (!have_model) return fail("no 'model' line");
    return identity;
}

std::optional<RecordIdentity> read_identity(const std::string& dir) {
    std::string path = dir + "/" + kFileName;
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return std::nullopt;
        throw RecallError(open_failure(path, errno));
    }
    std::string text;
    try {
        // Whoever could replace or widen the identity could also have
        // planted the chunk files it vouches for.
        check_private_file(fd, path);
        char buffer[4096];
        for (;;) {
            ssize_t n = ::read(fd, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw RecallError("recall: cannot read " + path + ": " + errno_text(errno));
            if (n == 0) break;
            text.append(buffer, static_cast<size_t>(n));
            // No identity is this long: refuse before reading a huge file whole.
            if (text.size() > (64u << 10)) {
                throw RecallError("recall: " + path + " is corrupt (over 64 KiB), so the chunk files beside it "
                                  "cannot be attributed to a tokenizer. Delete the directory " + dir +
                                  " to start a fresh record there, or pass another --recall-dir");
            }
        }
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
    std::string problem;
    std::optional<RecordIdentity> identity = parse_identity(text, &problem);
    if (!identity) {
        throw RecallError("recall: " + path + " is corrupt (" + problem +
                          "), so the chunk files beside it cannot be attributed to a tokenizer. Delete the "
                          "directory " + dir + " to start a fresh record there, or pass another --recall-dir");
    }
    return identity;
}

void write_identity(const std::string& dir, const RecordIdentity& identity) {
    std::string temp = dir + "/" + kTempName;
    std::string path = dir + "/" + kFileName;
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw RecallError("recall: cannot create " + temp + ": " + errno_text(errno) + "; pass another --recall-dir");
    bool ok = ::fchmod(fd, 0600) == 0 && write_all(fd, format_identity(identity)) && ::fsync(fd) == 0;
    int err = errno;
    ::close(fd);
    if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
        if (ok) err = errno;
        ::unlink(temp.c_str());
        throw RecallError("recall: cannot write " + path + ": " + errno_text(err) + "; pass another --recall-dir");
    }
}

void check_same_tokenizer(const std::string& dir, const RecordIdentity& record, const TokenizerIdentity& server) {
    if (record.tokenizer == server) return;
    throw RecallError("recall: the record in " + dir + " was written by tokenizer " + describe(record.tokenizer) +
                      " for model '" + record.model + "', but this server's tokenizer is " + describe(server) +
                      ". Pass another --recall-dir, or delete " + dir + " to start a fresh record there");
}

}  // namespace tf::recall
