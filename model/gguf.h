// GGUF files (llama.cpp's single-file model format), memory-mapped and
// checked before anything trusts them.
//
// Layout (all little-endian; versions 2 and 3 share it, version 1 had 32-bit
// counts and is refused):
//
//   u32 magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count
//   kv_count x  { string key | u32 value_type | value }
//   tensor_count x { string name | u32 n_dims | u64 dims[n_dims] | u32 ggml_type | u64 offset }
//   zero padding up to general.alignment (32 when the key is absent)
//   tensor data: each tensor at data_start + offset, offset a multiple of
//   the alignment
//
// A string is u64 length + bytes (no terminator). A value is one of the
// scalar types, a string, or an array: u32 element type | u64 count |
// elements. dims[0] is the innermost (contiguous) axis: a matrix of R rows
// of C columns is stored with dims {C, R}, rows of C elements in its type's
// blocks.
//
// Every count is checked against the bytes left before anything is
// allocated from it, so a corrupt file costs at most its own size. Errors
// are LoadError naming the file and the key or tensor.
//
// A split set ("NAME-00001-of-00003.gguf") opens from any of its files: the
// metadata comes from the first, the tensors from all.
//
// Thread-safety: immutable after open(); safe to read from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace tf::model {

enum class GgufType : uint32_t {
    u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
    string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
const char* gguf_type_name(GgufType type);

// The ggml tensor types tensorfold reads, by their numbers in the file.
// Others are still parsed (their sizes are known) and refused by the loader
// by name.
namespace ggml_type {
inline constexpr uint32_t f32 = 0, f16 = 1, q4_0 = 2, q5_0 = 6, q8_0 = 8, q4_k = 12, q5_k = 13, q6_k = 14, bf16 = 30;
}
// "Q4_K", "BF16", ... or "type 99".
std::string ggml_type_name(uint32_t type);
// Elements per block and bytes per block; {0, 0} for a type this build does
// not know the size of.
struct GgmlBlock {
    uint32_t elements = 0;
    uint32_t bytes = 0;
};
GgmlBlock ggml_block(uint32_t type);

// One metadata value. Scalars keep their exact value in the member their
// kind needs; arrays of numbers and of strings are kept whole (tokenizer
// vocabularies); arrays of arrays are skipped (nothing tensorfold reads
// uses them) and hold only their count.
struct GgufValue {
    GgufType type = GgufType::u8;
    GgufType element = GgufType::u8;  // arrays only
    uint64_t count = 0;               // arrays only
    uint64_t uint = 0;                // unsigned integers and booleans
    int64_t sint = 0;                 // signed integers
    double real = 0;                  // f32, f64
    std::string text;                 // string
    std::vector<std::string> strings; // array of string
    std::vector<int64_t> ints;        // array of any integer type or bool
    std::vector<double> reals;        // array of f32 or f64
};

struct GgufTensor {
    std::string name;
    std::vector<uint64_t> dims;  // dims[0] innermost
    uint32_t type = 0;
    uint64_t offset = 0;         // from the data section's start
    const std::byte* data = nullptr;
    size_t bytes = 0;
    std::string file;            // for messages
};

class GgufFile {
public:
    // PATH, or the set PATH belongs to when its name says it is one split of
    // several. Throws LoadError.
    static GgufFile open(const std::string& path);
    // One file's bytes already mapped (the fuzz target); no split handling.
    static GgufFile parse(std::shared_ptr<MappedFile> file);

    const std::string& path() const { return path_; }  // the first (or only) file
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }

    const GgufValue* find(const std::string& key) const;
    // Typed reads: a missing key or one of another type is a LoadError
    // "FILE: KEY is missing" / "FILE: KEY is a f32, expected an integer".
    std::string string(const std::string& key) const;
    uint64_t unsigned_int(const std::string& key) const;  // any integer type, checked non-negative
    // A layer, head or expert count: an integer in [1, INT32_MAX], else a
    // LoadError "FILE: KEY is 0, expected a positive count".
    int32_t count(const std::string& key) const;
    double number(const std::string& key) const;          // any integer or float type
    bool boolean(const std::string& key) const;
    std::optional<std::string> optional_string(const std::string& key) const;
    std::optional<uint64_t> optional_unsigned_int(const std::string& key) const;
    std::optional<double> optional_number(const std::string& key) const;
    std::optional<bool> optional_boolean(const std::string& key) const;
    // Arrays; empty when the key is absent, LoadError when it holds another type.
    const std::vector<std::string>& strings(const std::string& key) const;
    const std::vector<int64_t>& ints(const std::string& key) const;
    const std::vector<double>& reals(const std::string& key) const;

    const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
    const std::vector<GgufTensor>& tensors() const { return tensors_; }
    const GgufTensor* find_tensor(const std::string& name) const;

private:
    void add_tensors_of(std::shared_ptr<MappedFile> file, bool first);
    [[noreturn]] void fail_type(const std::string& key, const GgufValue& value, const char* expected) const;

    std::string path_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    std::map<std::string, GgufValue> metadata_;
    std::vector<GgufTensor> tensors_;
    std::map<std::string, size_t> tensor_index_;
    std::vector<std::shared_ptr<MappedFile>> files_;
};

// Whether PATH names a GGUF file by its extension (".gguf", any case).
bool is_gguf_path(const std::string& path);

// "NAME-00002-of-00005.gguf" -> {NAME, 2, 5}; nullopt for a name that is
// not one split of two or more.
struct GgufSplitName {
    std::string stem;
    int index = 0;  // 1-based, as in the name
    int count = 0;
};
std::optional<GgufSplitName> gguf_split_name(const std::string& path);

}  // namespace tf::model
