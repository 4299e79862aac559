// A GGUF writer for tests only: builds a file's bytes in memory, valid by
// default, with every field a test may want to corrupt left open to it (the
// magic, the version, the counts, raw value bytes, tensor offsets and the
// data's length). It does not use model/gguf.cpp to compute anything, so a
// size or offset bug there cannot hide behind the same bug here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "model/gguf.h"

namespace tf::model::testing {

// Little-endian bytes of an integer or float, as GGUF stores every scalar.
template <class T>
std::string le(T value) {
    std::string bytes(sizeof(T), '\0');
    std::memcpy(bytes.data(), &value, sizeof(T));  // x86 and ARM Linux are little-endian
    return bytes;
}
inline std::string gguf_str(const std::string& text) { return le<uint64_t>(text.size()) + text; }
inline std::string type_tag(GgufType type) { return le<uint32_t>(static_cast<uint32_t>(type)); }

class GgufWriter {
public:
    struct Tensor {
        std::string name;
        std::vector<uint64_t> dims;  // dims[0] innermost, as in the file
        uint32_t type = ggml_type::f32;
        std::optional<uint64_t> offset;      // from the data section; default: next aligned spot
        std::optional<uint64_t> data_bytes;  // default: what dims and type need
        std::optional<uint32_t> n_dims;      // default: dims.size()
    };

    uint32_t magic = 0x46554747;  // "GGUF"
    uint32_t version = 3;
    std::optional<uint64_t> tensor_count;  // default: the tensors added
    std::optional<uint64_t> kv_count;      // default: the keys added
    uint64_t alignment = 32;               // the padding used; align() also writes the key

    // One key with its type tag and already-encoded value: the way to write
    // what a well-behaved writer never would (a bool of 2, a type of 99).
    GgufWriter& raw(const std::string& key, uint32_t type, const std::string& value_bytes) {
        kvs_ += gguf_str(key) + le<uint32_t>(type) + value_bytes;
        ++kvs_added_;
        return *this;
    }
    GgufWriter& raw(const std::string& key, GgufType type, const std::string& value_bytes) {
        return raw(key, static_cast<uint32_t>(type), value_bytes);
    }
    template <class T>
    GgufWriter& scalar(const std::string& key, GgufType type, T value) {
        return raw(key, type, le<T>(value));
    }
    GgufWriter& u8(const std::string& k, uint8_t v) { return scalar(k, GgufType::u8, v); }
    GgufWriter& i8(const std::string& k, int8_t v) { return scalar(k, GgufType::i8, v); }
    GgufWriter& u16(const std::string& k, uint16_t v) { return scalar(k, GgufType::u16, v); }
    GgufWriter& i16(const std::string& k, int16_t v) { return scalar(k, GgufType::i16, v); }
    GgufWriter& u32(const std::string& k, uint32_t v) { return scalar(k, GgufType::u32, v); }
    GgufWriter& i32(const std::string& k, int32_t v) { return scalar(k, GgufType::i32, v); }
    GgufWriter& u64(const std::string& k, uint64_t v) { return scalar(k, GgufType::u64, v); }
    GgufWriter& i64(const std::string& k, int64_t v) { return scalar(k, GgufType::i64, v); }
    GgufWriter& f32(const std::string& k, float v) { return scalar(k, GgufType::f32, v); }
    GgufWriter& f64(const std::string& k, double v) { return scalar(k, GgufType::f64, v); }
    GgufWriter& boolean(const std::string& k, bool v) { return scalar(k, GgufType::boolean, uint8_t{v}); }
    GgufWriter& string(const std::string& k, const std::string& v) { return raw(k, GgufType::string, gguf_str(v)); }
    GgufWriter& strings(const std::string& k, const std::vector<std::string>& items) {
        std::string bytes = type_tag(GgufType::string) + le<uint64_t>(items.size());
        for (const auto& s : items) bytes += gguf_str(s);
        return raw(k, GgufType::array, bytes);
    }
    template <class T>
    GgufWriter& array(const std::string& k, GgufType element, const std::vector<T>& items) {
        std::string bytes = type_tag(element) + le<uint64_t>(items.size());
        for (const T& v : items) bytes += le<T>(v);
        return raw(k, GgufType::array, bytes);
    }
    // general.alignment as a u32, and the padding to match.
    GgufWriter& align(uint32_t bytes) {
        alignment = bytes;
        return u32("general.alignment", bytes);
    }

    GgufWriter& tensor(Tensor t) {
        tensors_.push_back(std::move(t));
        return *this;
    }
    GgufWriter& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type = ggml_type::f32) {
        return tensor(Tensor{name, std::move(dims), type, {}, {}, {}});
    }

    // Bytes the data section gives a tensor of these dims and type, from
    // ggml's block sizes (written out here, not asked of the reader).
    static uint64_t bytes_of(const std::vector<uint64_t>& dims, uint32_t type) {
        uint64_t elements = 1;
        for (uint64_t d : dims) elements *= d;
        switch (type) {
            case ggml_type::f32: return elements * 4;
            case ggml_type::f16: case ggml_type::bf16: return elements * 2;
            case ggml_type::q8_0: return elements / 32 * 34;
            case ggml_type::q4_0: return elements / 32 * 18;
            case ggml_type::q4_k: return elements / 256 * 144;
            case ggml_type::q6_k: return elements / 256 * 210;
            default: return 0;
        }
    }

    // Where each tensor's data starts, from the data section's start.
    std::vector<uint64_t> offsets() const {
        std::vector<uint64_t> at;
        uint64_t next = 0;
        for (const Tensor& t : tensors_) {
            const uint64_t offset = t.offset.value_or(round_up(next));
            at.push_back(offset);
            next = std::max(next, offset + size_of(t));
        }
        return at;
    }
    // The header alone: what precedes the padding before the data.
    std::string header() const {
        std::string out = le<uint32_t>(magic) + le<uint32_t>(version) +
                          le<uint64_t>(tensor_count.value_or(tensors_.size())) + le<uint64_t>(kv_count.value_or(kvs_added_)) + kvs_;
        const std::vector<uint64_t> at = offsets();
        for (size_t i = 0; i < tensors_.size(); ++i) {
            const Tensor& t = tensors_[i];
            out += gguf_str(t.name) + le<uint32_t>(t.n_dims.value_or(static_cast<uint32_t>(t.dims.size())));
            for (uint64_t d : t.dims) out += le<uint64_t>(d);
            out += le<uint32_t>(t.type) + le<uint64_t>(at[i]);
        }
        return out;
    }
    // The whole file. Tensor i's bytes are all 0x10 + i, so a test can tell
    // which tensor a data pointer landed on.
    std::string bytes() const {
        std::string out = header();
        out.resize(round_up(out.size()), '\0');
        const size_t data_start = out.size();
        const std::vector<uint64_t> at = offsets();
        for (size_t i = 0; i < tensors_.size(); ++i) {
            const uint64_t end = data_start + at[i] + size_of(tensors_[i]);
            if (out.size() < end) out.resize(end, '\0');
            std::memset(out.data() + data_start + at[i], 0x10 + static_cast<int>(i), size_of(tensors_[i]));
        }
        return out;
    }
    void write(const std::filesystem::path& path) const { write_file(path, bytes()); }

    static void write_file(const std::filesystem::path& path, const std::string& bytes) {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }

private:
    uint64_t round_up(uint64_t n) const { return (n + alignment - 1) / alignment * alignment; }
    uint64_t size_of(const Tensor& t) const { return t.data_bytes.value_or(bytes_of(t.dims, t.type)); }

    std::string kvs_;
    uint64_t kvs_added_ = 0;
    std::vector<Tensor> tensors_;
};

}  // namespace tf::model::testing
