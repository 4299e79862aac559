// The record's identity file: which tokenizer wrote the record.
//
// It records a digest over the vocabulary, merges and added tokens, the
// vocabulary size, and the model served when the record was created. Servers
// whose tokenizers match share the record; a mismatching one exits at start-up
// and the error names the tokenizer found in the file (docs/recall.md, "On disk").
//
// The file is short UTF-8 text, one `key value` per line:
//
//   # tensorfold recall record: the tokenizer that wrote it
//   format 1
//   tokenizer_sha256 <lower-case hex digest>
//   vocab_size <decimal>
//   model <the model the server first served, rest of the line>
//
// Pure functions; no state. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace tf::recall {

// What tokenizer/ computes for a tokenizer: the SHA-256 digest (hex) over its
// vocabulary, merges and added tokens in canonical order, and its vocabulary
// size. recall/ takes it as plain data and does not depend on tokenizer/.
struct TokenizerIdentity {
    std::string digest_hex;
    uint32_t vocab_size = 0;

    bool operator==(const TokenizerIdentity&) const = default;
};

// The contents of an identity file.
struct RecordIdentity {
    TokenizerIdentity tokenizer;
    std::string model;  // the model the server that created the record first served

    bool operator==(const RecordIdentity&) const = default;
};

// Every refusal to open a record: identity mismatch, corrupt or missing
// identity, unusable directory. what() says what a user can do about it.
class RecallError : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
};

// Throws RecallError unless digest_hex is 16 or more lower-case hex digits
// and vocab_size is positive.
void validate(const TokenizerIdentity& tokenizer);

// The identity file's text for `identity`.
std::string format_identity(const RecordIdentity& identity);

// Parses an identity file's text; nullopt with `problem` set when the text is
// not a well-formed identity (missing key, bad number, unknown format).
std::optional<RecordIdentity> parse_identity(const std::string& text, std::string* problem);

// Reads `dir`/identity. Returns nullopt when the file does not exist; throws
// RecallError naming the file and the fix when it exists but cannot be read or
// parsed ("never silent reuse").
std::optional<RecordIdentity> read_identity(const std::string& dir);

// Writes `dir`/identity with mode 0600: to identity.tmp first, then rename(2),
// so a crash never leaves a half-written identity. Throws RecallError.
void write_identity(const std::string& dir, const RecordIdentity& identity);

// Throws RecallError when `server` is not the tokenizer that wrote `record`;
// the message names the writer's digest, vocabulary size and model.
void check_same_tokenizer(const std::string& dir, const RecordIdentity& record, const TokenizerIdentity& server);

// One line naming a tokenizer for messages: "sha256 <digest> (vocabulary N)".
std::string describe(const TokenizerIdentity& tokenizer);

}  // namespace tf::recall
